//go:build !unix

package main

// dataFolderHeld is false where serve locks no data folder (no flock).
func dataFolderHeld(string) (bool, int) { return false, 0 }

// fileOwner is unknown where files have no owning user id.
func fileOwner(string) (int, bool) { return 0, false }
