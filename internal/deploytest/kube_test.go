package deploytest

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

var (
	binOnce sync.Once
	binFile string
	binErr  error
)

// memfsdBin builds cmd/memfsd once for the package's tests.
func memfsdBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memfsd-deploytest-")
		if err != nil {
			binErr = err
			return
		}
		binFile = filepath.Join(dir, "memfsd")
		cmd := exec.Command("go", "build", "-o", binFile, "./cmd/memfsd")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			binFile = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("build memfsd: %v\n%s", binErr, binFile)
	}
	return binFile
}

var flagRE = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`)

// helpFlags are the flags `memfsd <cmd> --help` names.
func helpFlags(t *testing.T, cmd ...string) map[string]bool {
	t.Helper()
	out, err := exec.Command(memfsdBin(t), append(cmd, "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("memfsd %s --help: %v\n%s", strings.Join(cmd, " "), err, out)
	}
	flags := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 5 {
		t.Fatalf("memfsd %s --help names %d flags:\n%s", strings.Join(cmd, " "), len(flags), out)
	}
	return flags
}

// checkArgs: every --flag in args is one memfsd names in help.
func checkArgs(t *testing.T, where string, args []string, flags map[string]bool) {
	t.Helper()
	for _, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if !flags[name] {
			t.Errorf("%s: --%s is not a flag of memfsd", where, name)
		}
	}
}

// envNotFlags are the MEMFSD_ variables memfsd reads that are no flag's.
var envNotFlags = map[string]bool{"MEMFSD_TOKEN": true, "MEMFSD_USERNAME": true, "MEMFSD_MIRROR_TOKEN": true, "MEMFSD_MIRROR_USERNAME": true}

type kubeEnv struct{ Name, Value string }

type kubeContainer struct {
	Name            string
	Image           string
	Args            []string
	Env             []kubeEnv
	SecurityContext struct {
		RunAsUser  *int64 `yaml:"runAsUser"`
		RunAsGroup *int64 `yaml:"runAsGroup"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
	ReadinessProbe *struct {
		Exec struct{ Command []string }
	} `yaml:"readinessProbe"`
	Resources struct {
		Requests map[string]string
		Limits   map[string]string
	}
}

func (c kubeContainer) env(name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// mountFor is the volume mounted at a folder holding p, and p's path in it.
func (c kubeContainer) mountFor(p string) (vol, rel string) {
	for _, m := range c.VolumeMounts {
		if r, ok := strings.CutPrefix(p, m.MountPath+"/"); ok && m.SubPath == "" {
			return m.Name, r
		}
	}
	return "", ""
}

type kubeDoc struct {
	Kind string
	Spec struct {
		Template struct {
			Spec struct {
				SecurityContext struct {
					FSGroup *int64 `yaml:"fsGroup"`
				} `yaml:"securityContext"`
				Volumes []struct {
					Name   string
					Secret *struct {
						SecretName string `yaml:"secretName"`
					}
				}
				Containers []kubeContainer
			}
		}
	}
}

// The Kubernetes example (issue 40): it parses; the memfsd container runs
// the image scripts/image.sh builds with only flags and MEMFSD_ variables
// memfsd has, its token from a Secret volume through --token-file, the
// sharing mode with the agent in memfsd's group as another user, a
// readiness probe on memfsd health, resource requests; the agent reaches
// its memory folder and socket under memfsd's home and not the token.
func TestKubernetesExample(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "examples", "kubernetes", "memfsd-sidecar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep *kubeDoc
	for _, part := range strings.Split(string(data), "\n---\n") {
		var d kubeDoc
		if err := yaml.Unmarshal([]byte(part), &d); err != nil {
			t.Fatalf("the example does not parse: %v", err)
		}
		if d.Kind == "Deployment" {
			dep = &d
		}
	}
	if dep == nil {
		t.Fatal("no Deployment in the example")
	}
	pod := dep.Spec.Template.Spec
	var memfsd, agent kubeContainer
	for _, c := range pod.Containers {
		switch c.Name {
		case "memfsd":
			memfsd = c
		case "agent":
			agent = c
		}
	}
	if memfsd.Name == "" || agent.Name == "" {
		t.Fatalf("containers %v: want agent and memfsd", pod.Containers)
	}

	// The image scripts/image.sh tags.
	script, _ := os.ReadFile(filepath.Join(root, "scripts", "image.sh"))
	if memfsd.Image != "localhost/memfsd:latest" || !strings.Contains(string(script), "localhost/memfsd:latest") {
		t.Errorf("memfsd's image %q: want localhost/memfsd:latest, which scripts/image.sh tags", memfsd.Image)
	}

	// Flags and variables memfsd has.
	if len(memfsd.Args) == 0 || memfsd.Args[0] != "run" {
		t.Fatalf("memfsd args %q: want run first", memfsd.Args)
	}
	checkArgs(t, "memfsd's args", memfsd.Args[1:], helpFlags(t, "run"))
	runFlags := helpFlags(t, "run")
	for _, e := range memfsd.Env {
		if !strings.HasPrefix(e.Name, "MEMFSD_") || envNotFlags[e.Name] {
			continue
		}
		if f := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(e.Name, "MEMFSD_")), "_", "-"); !runFlags[f] {
			t.Errorf("env %s: memfsd run has no flag --%s", e.Name, f)
		}
	}
	arg := func(name string) (string, bool) {
		for _, a := range memfsd.Args {
			if a == "--"+name {
				return "", true
			}
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v, true
			}
		}
		return "", false
	}

	// The token from a Secret volume, by --token-file; no MEMFSD_TOKEN.
	tokenFile, ok := arg("token-file")
	vol, _ := memfsd.mountFor(tokenFile)
	isSecret := false
	for _, v := range pod.Volumes {
		isSecret = isSecret || (v.Name == vol && v.Secret != nil)
	}
	if !ok || !isSecret || memfsd.env("MEMFSD_TOKEN") != "" {
		t.Errorf("token: --token-file %q (given %v) on volume %q (a secret: %v), MEMFSD_TOKEN %q: want a file on a Secret volume and no variable", tokenFile, ok, vol, isSecret, memfsd.env("MEMFSD_TOKEN"))
	}
	if v, _ := agent.mountFor(tokenFile); v != "" {
		t.Errorf("the agent mounts the token's volume %q", v)
	}

	// The sharing mode: another user in memfsd's group, the pod's fsGroup.
	if _, ok := arg("share-group"); !ok {
		t.Errorf("memfsd args %q: want --share-group", memfsd.Args)
	}
	ms, as, fsg := memfsd.SecurityContext, agent.SecurityContext, pod.SecurityContext.FSGroup
	if ms.RunAsUser == nil || as.RunAsUser == nil || *ms.RunAsUser == *as.RunAsUser || *ms.RunAsUser == 0 || *as.RunAsUser == 0 {
		t.Errorf("runAsUser memfsd %v agent %v: want two non-root users", ms.RunAsUser, as.RunAsUser)
	}
	if ms.RunAsGroup == nil || as.RunAsGroup == nil || fsg == nil || *ms.RunAsGroup != *as.RunAsGroup || *ms.RunAsGroup != *fsg {
		t.Errorf("runAsGroup memfsd %v agent %v fsGroup %v: want one group", ms.RunAsGroup, as.RunAsGroup, fsg)
	}

	// The agent's folder and socket are memfsd's, under its home.
	home, id := memfsd.env("MEMFSD_HOME"), ""
	if v, ok := arg("agent"); ok {
		id = v
	}
	wantDir, wantSock := path.Join(home, "agents", id, "memory"), "unix://"+path.Join(home, "agents", id, "memfsd.sock")
	if agent.env("MEMORY_DIR") != wantDir || agent.env("MEMFSD_LISTEN") != wantSock {
		t.Errorf("agent MEMORY_DIR %q MEMFSD_LISTEN %q, want %q and %q (memfsd's home %q, agent %q)", agent.env("MEMORY_DIR"), agent.env("MEMFSD_LISTEN"), wantDir, wantSock, home, id)
	}
	mv, mrel := memfsd.mountFor(wantDir)
	av, arel := agent.mountFor(agent.env("MEMORY_DIR"))
	if mv == "" || mv != av || mrel != arel {
		t.Errorf("memory folder: memfsd's volume %q (%q), the agent's %q (%q): want the same place", mv, mrel, av, arel)
	}

	// Readiness: memfsd health, the image's binary, flags it has.
	if memfsd.ReadinessProbe == nil || len(memfsd.ReadinessProbe.Exec.Command) < 2 {
		t.Fatal("memfsd has no exec readiness probe")
	}
	probe := memfsd.ReadinessProbe.Exec.Command
	dockerfile, _ := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if probe[1] != "health" || !strings.Contains(string(dockerfile), `ENTRYPOINT ["`+probe[0]+`"]`) {
		t.Errorf("readiness probe %q: want the image's memfsd (the Dockerfile's ENTRYPOINT) health", probe)
	}
	checkArgs(t, "the readiness probe", probe[2:], helpFlags(t, "health"))

	if memfsd.Resources.Requests["memory"] == "" || memfsd.Resources.Requests["cpu"] == "" || memfsd.Resources.Limits["memory"] == "" {
		t.Errorf("memfsd resources %+v: want cpu and memory requests and a memory limit", memfsd.Resources)
	}
}
