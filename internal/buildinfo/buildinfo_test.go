package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/agentreach/reach", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		ldflag, want string
	}{
		{"", "reach v0.3.0 (rev 1a2b3c4d5e6f+dirty, 2026-12-01T10:00:00Z) go1.26.0"},
		{"v9.9.9", "reach v9.9.9 (rev 1a2b3c4d5e6f+dirty, 2026-12-01T10:00:00Z) go1.26.0"},
	} {
		if got := fromBuildInfo(bi, tc.ldflag).String(); got != tc.want {
			t.Errorf("with -X Version=%q: %q, want %q", tc.ldflag, got, tc.want)
		}
	}
	bare := &debug.BuildInfo{GoVersion: "go1.26.0"}
	if got := fromBuildInfo(bare, "").String(); got != "reach (devel) go1.26.0" {
		t.Errorf("without a version or revision: %q", got)
	}
}
