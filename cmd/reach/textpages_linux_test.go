package main

import (
	"os"
	"strings"
	"testing"
)

// The mappings given back are the executable's read-only ones whose pages
// are all the file's: not a writable one, not one the loader wrote into
// (relocations: anonymous pages), not another file's, not a deleted
// file's.
func TestOwnFileMappings(t *testing.T) {
	const smaps = `00400000-00403000 r--p 00000000 fd:00 42 /opt/reach
Size:                 12 kB
Anonymous:             0 kB
VmFlags: rd mr mw me
00403000-0166e000 r-xp 00003000 fd:00 42 /opt/reach
Size:              18860 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
0166e000-02b44000 r--p 0126e000 fd:00 42 /opt/reach
Anonymous:             0 kB
02b44000-02b47000 r--p 02744000 fd:00 42 /opt/reach
Anonymous:            12 kB
02b47000-02c69000 rw-p 02747000 fd:00 42 /opt/reach
Anonymous:           900 kB
02c69000-02d00000 rw-p 00000000 00:00 0
Anonymous:           500 kB
7f0000000000-7f0000100000 r-xp 00000000 fd:00 77 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000200000-7f0000300000 r-xp 00000000 fd:00 43 /opt/reach-old (deleted)
Anonymous:             0 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
Anonymous:           132 kB
`
	got := ownFileMappings([]byte(smaps), "/opt/reach")
	want := []mapping{{0x400000, 0x403000}, {0x403000, 0x166e000}, {0x166e000, 0x2b44000}}
	if len(got) != len(want) {
		t.Fatalf("mappings %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d is %x, want %x", i, got[i], want[i])
		}
	}
	if got := ownFileMappings([]byte(smaps), "/opt/reach-old"); len(got) != 0 {
		t.Errorf("a deleted file's mappings %x, want none", got)
	}
}

// After mapOwnPagesSmall the executable's code is mapped in small pages
// only (VmFlags "nh", no PMD), and the process runs on: the mapping the
// loader wrote into keeps its pages.
func TestMapOwnPagesSmall(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip("no /proc/self/exe:", err)
	}
	mapOwnPagesSmall()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	code, written := 0, 0
	var perms string
	var anon bool
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case !strings.HasSuffix(f[0], ":"):
			perms = ""
			if len(f) == 6 && f[5] == exe {
				perms = f[1]
			}
		case perms == "":
		case f[0] == "Anonymous:":
			anon = len(f) > 1 && f[1] != "0"
		case f[0] == "FilePmdMapped:" && len(f) > 1 && f[1] != "0" && strings.HasPrefix(perms, "r-"):
			t.Errorf("a %s mapping of the executable has %s kB mapped with PMDs", perms, f[1])
		case f[0] == "VmFlags:":
			nh := strings.Contains(line, " nh")
			switch {
			case perms == "r-xp":
				code++
				if !nh {
					t.Errorf("the executable's code is not marked for small pages: %s", line)
				}
			case anon:
				written++
				if nh {
					t.Errorf("a %s mapping the loader wrote into was advised too: %s", perms, line)
				}
			}
		}
	}
	if code == 0 {
		t.Fatalf("no code mapping of %s found in /proc/self/smaps", exe)
	}
	t.Logf("%d code mappings, %d written ones", code, written)
}
