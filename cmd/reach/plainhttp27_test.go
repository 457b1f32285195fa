package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestServeRefusesKeysInTheClear: `reach serve` and `reach validate`
// refuse a model whose key would go to a plain http:// host that is not
// loopback, naming the line and the opt-in; with allow_plain_http: true
// the same configuration serves.
func TestServeRefusesKeysInTheClear(t *testing.T) {
	t.Setenv("REACH27_MODEL_KEY", "sk-cleartext-9911")
	const model = "model:\n  name: m\n  base_url: http://192.0.2.10:8000/v1\n  api_key: ${REACH27_MODEL_KEY}\n"
	cfg := writeConfig(t, model)
	for _, args := range [][]string{
		{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir()},
		{"validate", "--config", cfg},
	} {
		cmd := args[0]
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "allow_plain_http: true") {
			t.Fatalf("%s: %v, want a refusal naming line 3 and allow_plain_http", cmd, err)
		}
		if strings.Contains(err.Error()+out.String()+errOut.String(), "sk-cleartext-9911") {
			t.Errorf("%s quotes the key", cmd)
		}
	}
	base, stop, _ := startServe(t, "--config", writeConfig(t, model+"  allow_plain_http: true\n"), "--listen", "127.0.0.1:0", "--data", t.TempDir())
	getJSON(t, "GET", base+"/v1/tools", "")
	if err := stop(); err != nil {
		t.Errorf("serve with allow_plain_http: %v", err)
	}
	if err := run(context.Background(), []string{"validate", "--offline", "--config", writeConfig(t, model+"  allow_plain_http: true\n")}, io.Discard, io.Discard); err != nil {
		t.Errorf("validate with allow_plain_http: %v", err)
	}
}
