// Package pack is git's pack format (Documentation/gitformat-pack) as
// bytes: Encode writes a pack of whole objects and its version 2 index
// (one memory write's objects), Index reads a pack as it streams in and
// indexes it in the same pass (memfsd's own `git index-pack`, for fetches,
// clones and repacks). Where packs live, which are kept and when they are
// rolled up belong to the object store (package gitmem).
package pack
