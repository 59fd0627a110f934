// Command checklinks checks that every relative link in README.md and
// docs/*.md resolves: the file (or folder) it names exists and, for a
// `#anchor`, that file has a heading with that anchor under GitHub's rules.
// It prints one line per broken link and exits 1 when there is any; web
// links (http:, https:, mailto:) are not followed. Run it from the module
// root (scripts/check-links.sh, .ci/run) or give the root as the argument.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	files, err := pages(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checklinks:", err)
		os.Exit(1)
	}
	problems, links, err := check(root, files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checklinks:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "checklinks: %d broken of %d relative links in %d files\n", len(problems), links, len(files))
		os.Exit(1)
	}
	fmt.Printf("checklinks: %d relative links in %d files, all resolve\n", links, len(files))
}

// pages lists the files checked: README.md and docs/*.md, relative to root.
func pages(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	sort.Strings(files[1:])
	return files, nil
}

var (
	// linkRE matches an inline link or image, [text](target "title").
	linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refRE matches a reference definition, [label]: target.
	refRE = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// codeRE matches an inline code span (one or more backticks, paired).
	codeRE    = regexp.MustCompile("(`+)[^`]*?(`+)")
	headingRE = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	schemeRE  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// check reads each file (a slash path relative to root) and returns one
// problem per link that does not resolve, "file:line: target: why", and
// the number of relative links seen.
func check(root string, files []string) ([]string, int, error) {
	anchors := map[string]map[string]bool{} // file (slash, relative to root) -> anchors
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := anchors[file]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[file] = a
		return a, nil
	}
	var problems []string
	links := 0
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, 0, err
		}
		for _, l := range linksIn(string(b)) {
			target := l.target
			if target == "" || schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
				continue
			}
			links++
			pathPart, anchor, _ := strings.Cut(target, "#")
			dest := file
			if pathPart != "" {
				if strings.HasPrefix(pathPart, "/") {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: absolute path (GitHub resolves it from the host, not the repository)", file, l.line, target))
					continue
				}
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), filepath.FromSlash(pathPart))))
				if dest == ".." || strings.HasPrefix(dest, "../") {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: outside the repository", file, l.line, target))
					continue
				}
				fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest)))
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: no file %s", file, l.line, target, dest))
					continue
				}
				if anchor != "" && fi.IsDir() {
					problems = append(problems, fmt.Sprintf("%s:%d: %s: an anchor into a folder", file, l.line, target))
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				continue // GitHub's line anchors (#L10) and the like: not checked
			}
			a, err := anchorsOf(dest)
			if err != nil {
				return nil, 0, err
			}
			if !a[anchor] {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: no heading with anchor #%s in %s", file, l.line, target, anchor, dest))
			}
		}
	}
	return problems, links, nil
}

type link struct {
	line   int
	target string
}

// linksIn returns the link targets of a Markdown text, outside fenced code
// blocks and inline code spans.
func linksIn(text string) []link {
	var out []link
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
				continue
			case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence):
				fence = ""
				continue
			}
		}
		if fence != "" {
			continue
		}
		line = codeRE.ReplaceAllString(line, "")
		if m := refRE.FindStringSubmatch(line); m != nil {
			out = append(out, link{i + 1, m[1]})
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, link{i + 1, m[1]})
		}
	}
	return out
}

// fenceOf returns the fence (``` or ~~~, as long as written) a line opens
// or closes, or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return ""
	}
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return t[:n]
		}
	}
	return ""
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a
// Markdown text (not those inside fenced code): a repeated anchor gets -1,
// -2, ... as on GitHub.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
				continue
			case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence):
				fence = ""
				continue
			}
		}
		if fence != "" {
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := githubAnchor(m[2])
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// linkTextRE matches a link in a heading, whose anchor keeps only its text.
var linkTextRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// githubAnchor is GitHub's anchor for a heading's text: links reduced to their
// text, lower case, every character but letters, digits, spaces, '-' and
// '_' dropped, then each space a '-'.
func githubAnchor(heading string) string {
	heading = linkTextRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
