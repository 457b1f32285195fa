package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// A flag's error (unknown, malformed, missing its value, or a required one
// not given) names the command's usage and where its flags are listed:
// `reach serve --bogus` said "unknown flag: --bogus" alone, and `reach keys
// create` "required flag(s) "principal" not set".
func TestFlagErrorsSayWhereFlagsAre(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--bogus"}, []string{"unknown flag: --bogus", "usage: reach serve [flags]", "(reach serve --help lists its flags)"}},
		{[]string{"keys", "create"}, []string{`required flag(s) "principal" not set`, "usage: reach keys create --principal NAME", "(reach keys create --help lists its flags)"}},
		{[]string{"requests", "list", "--limit", "x"}, []string{`invalid argument "x" for "--limit"`, "(reach requests list --help lists its flags)"}},
		{[]string{"approvals", "approve", "apr_1", "--reason"}, []string{"flag needs an argument: --reason", "usage: reach approvals approve ID"}},
		{[]string{"--bogus"}, []string{"unknown flag: --bogus", "(reach --help lists its flags)"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
