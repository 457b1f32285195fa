// Package buildinfo says which build of reach is running: the module
// version and the VCS revision Go stamps into the binary, for `reach
// version`, the reach_build_info metric and the service.version of spans.
//
//	info := buildinfo.Read()
//	fmt.Println(info) // reach v0.3.0 (rev 1a2b3c4d5e6f, 2026-12-01T10:00:00Z)
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version, when set at link time (-ldflags "-X
// github.com/agentreach/reach/internal/buildinfo.Version=v1.2.3"), is the
// version; otherwise the main module's version from the build info:
// v1.2.3 for `go install ...@v1.2.3`, a pseudo-version for a build in a
// clone with VCS stamping, or "(devel)".
var Version = ""

// Info is what a binary knows of its build.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"` // the VCS revision, if stamped
	Time      string `json:"time,omitempty"`     // the revision's commit time
	Modified  bool   `json:"modified,omitempty"` // built from a tree with changes
	GoVersion string `json:"go"`
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: orDevel(Version), GoVersion: runtime.Version()}
	}
	return fromBuildInfo(bi, Version)
}

func fromBuildInfo(bi *debug.BuildInfo, version string) Info {
	info := Info{Version: version, GoVersion: bi.GoVersion}
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	info.Version = orDevel(info.Version)
	return info
}

func orDevel(v string) string {
	if v == "" {
		return "(devel)"
	}
	return v
}

// Short returns the revision cut to 12 characters, with "+dirty" for a
// modified tree, or "" when none was stamped.
func (i Info) Short() string {
	r := i.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if r != "" && i.Modified {
		r += "+dirty"
	}
	return r
}

// String is the one line `reach version` prints.
func (i Info) String() string {
	s := "reach " + i.Version
	switch {
	case i.Revision != "" && i.Time != "":
		s += fmt.Sprintf(" (rev %s, %s)", i.Short(), i.Time)
	case i.Revision != "":
		s += fmt.Sprintf(" (rev %s)", i.Short())
	}
	return s + " " + i.GoVersion
}
