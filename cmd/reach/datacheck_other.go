//go:build !unix

package main

// dataFolderHeld is false where serve locks no data folder (no flock).
func dataFolderHeld(string) (bool, int) { return false, 0 }
