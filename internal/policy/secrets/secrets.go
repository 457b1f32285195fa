// Package secrets reads a secrets file, the one a configuration names
// with "secrets: {file: ...}": its values are usable as ${NAME} in the
// configuration, and are registered with the one redactor
// (internal/redact), which masks them wherever they would show. Masking is
// not this package's job.
//
//	vals, err := secrets.ReadFile(".reach/secrets.env")
//	red.Add(slices.Collect(maps.Values(vals))...)
package secrets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadFile reads a secrets file: a JSON object of names to strings, or
// lines of NAME=VALUE (blank lines and lines starting with # are skipped,
// "export " is allowed, values may be quoted).
func ReadFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading secrets: %w", err)
	}
	out := map[string]string{}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(t, &out); err != nil {
			return nil, fmt.Errorf("reading secrets from %s: %w", path, err)
		}
		return out, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxLine)
	n := 0
	for n = 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, val, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("reading secrets from %s: line %d is not NAME=VALUE", path, n)
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			if val[0] == '"' {
				if u, err := strconv.Unquote(val); err == nil {
					val = u
				} else {
					val = val[1 : len(val)-1]
				}
			} else {
				val = val[1 : len(val)-1]
			}
		}
		out[name] = val
	}
	if err := sc.Err(); err != nil {
		// Its words, never the line's: a value must not reach a log.
		if err == bufio.ErrTooLong {
			return nil, fmt.Errorf("reading secrets from %s: line %d is longer than %d bytes", path, n, maxLine)
		}
		return nil, fmt.Errorf("reading secrets from %s: %w", path, err)
	}
	return out, nil
}

// maxLine bounds a line of a NAME=VALUE secrets file.
const maxLine = 1 << 20
