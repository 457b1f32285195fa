package main

import (
	"io"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/spf13/cobra"
)

// TestDataDefaultOneSpelling: every command's --data shows one default,
// the folder serve uses (config.DefaultData, ".reach"); some help texts
// said "./.reach", others ".reach".
func TestDataDefaultOneSpelling(t *testing.T) {
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.LocalFlags().Lookup("data"); f != nil {
			seen++
			if f.DefValue != "" && f.DefValue != config.DefaultData {
				t.Errorf("%s: --data defaults to %q, want %q", c.CommandPath(), f.DefValue, config.DefaultData)
			}
			if f.DefValue == "" && !strings.Contains(f.Usage, "(default "+config.DefaultData+")") {
				t.Errorf("%s: --data says %q, want its default %s", c.CommandPath(), f.Usage, config.DefaultData)
			}
		}
		if help := c.Long + c.LocalFlags().FlagUsages(); strings.Contains(help, "./"+config.DefaultData) {
			t.Errorf("%s: its help spells the data folder ./%s, want %s", c.CommandPath(), config.DefaultData, config.DefaultData)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	if seen < 5 {
		t.Fatalf("%d commands with --data; want the keys, audit, serve, demo ... commands", seen)
	}
}
