package main

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"

	"github.com/agentreach/reach/internal/config"
	"github.com/spf13/cobra"
)

// logCommands are the commands that run a gateway and log: only they take
// --log-format and --log-level. The flags were the root's, so every
// command's help listed them and `reach keys list --log-level bogus` ran
// without a word, the flag read by nothing.
var logCommands = map[string]bool{"serve": true, "stdio": true, "validate": true, "demo": true}

// addLogFlags adds --log-format and --log-level to cmd, one of logCommands.
func addLogFlags(cmd *cobra.Command) {
	cmd.Flags().String("log-format", "", "the log's format: text (logfmt) or json (default text, or log.format in the configuration)")
	cmd.Flags().String("log-level", "", "the least level logged: debug, info, warn or error (default info, or log.level in the configuration)")
}

// newLogger returns the logger of a command writing to w: the format and
// level of its flags, else of the configuration's log section, else text
// at info.
func newLogger(cmd *cobra.Command, w io.Writer, cfg *config.Config) (*slog.Logger, error) {
	format, _ := cmd.Flags().GetString("log-format")
	level, _ := cmd.Flags().GetString("log-level")
	if cfg != nil && cfg.Log != nil {
		format, level = cmp.Or(format, cfg.Log.Format), cmp.Or(level, cfg.Log.Level)
	}
	if err := config.CheckLogFormat(format); err != nil {
		return nil, fmt.Errorf("--log-format: %w", err)
	}
	lvl, err := config.ParseLogLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
