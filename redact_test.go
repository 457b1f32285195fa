package reach_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// frameTexts returns every text a view of r's frames shows.
func frameTexts(r *reach.Request) []string {
	var out []string
	for _, f := range r.Frames() {
		out = append(out, f.Summary(), f.Text(), f.Why(), string(f.ShownArgs()), string(f.Result()))
		out = append(out, f.Warnings()...)
		if e := f.Err(); e != nil {
			b, _ := json.Marshal(e)
			out = append(out, string(b))
		}
	}
	if c := r.StopCause(); c != nil {
		out = append(out, c.Reason)
	}
	return out
}

// TestFramesKeepTextsMasked (D1): what a frame keeps for views is masked
// where it is made: what a model said (and the summary made of it), a
// failed model call's error, a refused turn's error, the caller's reason,
// the arguments as shown, a stop's reason.
func TestFramesKeepTextsMasked(t *testing.T) {
	const secret = "sk-model-KEY-0123456789"
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	rt := reach.New(&reach.Options{Redactor: red, Recorder: rec, DefaultBudget: &reach.Budget{Turns: 3}})
	rt.MustRegister(reach.Tool{Name: "lookup", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	}})
	ctx, req := begin(t, rt, nil)
	// A model endpoint that echoes the key it was sent.
	_, turn, err := rt.BeginModel(ctx, "gpt")
	if err != nil {
		t.Fatal(err)
	}
	turn.EndModel(reach.TokenUsage{Input: 10, Output: 10, Text: "you sent Authorization: Bearer " + secret})
	_, turn, _ = rt.BeginModel(ctx, "gpt")
	turn.FailModel(fmt.Errorf("the model endpoint answered 401 for key %s", secret))
	mctx, turn, _ := rt.BeginModel(ctx, "gpt")
	rt.Call(mctx, &reach.Call{ID: "c1", Tool: "lookup", Why: "the key " + secret + " said so",
		Arguments: json.RawMessage(`{"q":"x","password":"hunter2-hunter2","token":"` + secret + `"}`)})
	turn.EndModel(reach.TokenUsage{Text: "done"})
	if _, _, err := rt.BeginModel(ctx, "gpt"); err == nil { // the fourth turn: refused
		t.Fatal("a turn over the budget was let through")
	}
	req.Stop(reach.Cancel, "operator", "stopped: the key "+secret+" leaked, password=hunter2-hunter2")
	texts := frameTexts(req)
	rec.mu.Lock()
	for _, e := range rec.events {
		b, _ := json.Marshal(e)
		texts = append(texts, string(b))
	}
	rec.mu.Unlock()
	all := strings.Join(texts, "\n")
	for _, s := range []string{secret, "hunter2"} {
		if strings.Contains(all, s) {
			t.Errorf("%q is shown:\n%s", s, all)
		}
	}
	if got := req.Frames()[0].Summary(); got != "you sent Authorization: [REDACTED]" {
		t.Errorf("the model frame's summary is %q", got)
	}
	if !strings.Contains(all, `"password":"[REDACTED]"`) {
		t.Errorf("the arguments are not shown masked:\n%s", all)
	}
	// The guards still see the arguments as they were.
	for _, f := range req.Frames() {
		if f.Kind == reach.ToolFrame && !bytes.Contains(f.Args, []byte("hunter2-hunter2")) {
			t.Errorf("the frame's arguments lost their value: %s", f.Args)
		}
	}
}

// TestDefaultRedactor: a runtime given no Redactor masks values under
// secret names all the same, for the model and for views.
func TestDefaultRedactor(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "login", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"user":"bob","access_token":"tok-0123456789"}`), nil
	}})
	ctx, req := begin(t, rt, nil)
	res := rt.Call(ctx, &reach.Call{ID: "c", Tool: "login", Arguments: json.RawMessage(`{"password":"hunter2-hunter2"}`)})
	all := res.ModelText() + strings.Join(frameTexts(req), "\n")
	if strings.Contains(all, "tok-0123456789") || strings.Contains(all, "hunter2") {
		t.Errorf("a secret is shown:\n%s", all)
	}
	if !strings.Contains(res.ModelText(), `"user":"bob"`) {
		t.Errorf("the model got %s", res.ModelText())
	}
}

// TestRedactStoredRows runs calls that carry registered secrets and
// secret-named fields everywhere they can be (arguments, results, errors,
// reasons, what the model said, stop reasons) through a runtime that
// records into an audit log on disk, then scans the database's bytes,
// every decoded field and every frame's view: none may be there.
func TestRedactStoredRows(t *testing.T) {
	secrets := []string{"sk-live-7Hq2x9Zr", "ghp_Q8wLm2Vb7Ks", `tok"with\quote`}
	secretKeys := []string{"password", "Password", "API_KEY", "x-api-key", "client_secret", "access_token",
		"Authorization", "refresh-token", "db.passwd", "Cookie", "private_key", "credentials", "sessionId",
		"token_type", "x-api-token", "accessToken"}
	rng := rand.New(rand.NewPCG(7, 7))
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	red, err := redact.New(&redact.Options{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	rt := reach.New(&reach.Options{Redactor: red, Recorder: log, DefaultBudget: &reach.Budget{}})
	var markers []string
	mark := func() string {
		m := fmt.Sprintf("mark%06dz", len(markers))
		markers = append(markers, m)
		return m
	}
	sec := func() string { return secrets[rng.IntN(len(secrets))] }
	key := func() string { return secretKeys[rng.IntN(len(secretKeys))] }
	// value builds a random JSON value holding secrets and marked
	// secret-named fields at random depths.
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rng.IntN(7); {
		case depth > 3 || k == 0:
			return "v " + sec() + " end"
		case k == 1:
			return []any{value(depth + 1), sec(), 7}
		case k == 2:
			return map[string]any{key(): mark(), "n": value(depth + 1)}
		case k == 3:
			return map[string]any{key(): map[string]any{"deep": mark(), "more": []any{mark()}}}
		case k == 4:
			return fmt.Sprintf("%s=%s; q=1", key(), mark())
		case k == 5:
			b, _ := json.Marshal(map[string]any{key(): []any{mark()}})
			return "cfg " + string(b)
		default:
			return map[string]any{sec(): "as a key"}
		}
	}
	rt.MustRegister(
		reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			b, _ := json.Marshal(map[string]any{"result": value(0), "args": json.RawMessage(args)})
			return b, nil
		}},
		reach.Tool{Name: "fail", Access: reach.Read, Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New(fmt.Sprintf("upstream said %s: %s=%s", sec(), key(), mark()))
		}},
	)
	var keeps []string
	for i := range 100 {
		keep := fmt.Sprintf("keep%04d", i)
		keeps = append(keeps, keep)
		rctx, req, err := rt.Begin(ctx, &reach.RequestOptions{ID: fmt.Sprintf("r%03d", i), Principal: "p"})
		if err != nil {
			t.Fatal(err)
		}
		mctx, turn, err := rt.BeginModel(rctx, "gpt")
		if err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]any{"query": keep, "x": value(0), "y": value(0)})
		rt.Call(mctx, &reach.Call{ID: "c1", Tool: "echo", Arguments: args, Why: "because " + sec()})
		rt.Call(mctx, &reach.Call{ID: "c2", Tool: "fail", Arguments: json.RawMessage(`{"q":1}`)})
		turn.EndModel(reach.TokenUsage{Input: 1, Text: fmt.Sprintf("the model said %s and %s: %s", sec(), key(), mark())})
		req.Stop(reach.Cancel, "op", fmt.Sprintf("stopped over %s, %s=%s", sec(), key(), mark()))
		views := strings.Join(frameTexts(req), "\n")
		for _, s := range secrets {
			if strings.Contains(views, s) {
				t.Fatalf("request %s: a frame shows the secret %q:\n%s", req.ID(), s, views)
			}
		}
		for _, m := range markers {
			if strings.Contains(views, m) {
				t.Fatalf("request %s: a frame shows the secret-named value %q:\n%s", req.ID(), m, views)
			}
		}
		req.End()
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	recent, err := audit.Recent(ctx, st, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) < 400 {
		t.Fatalf("%d events stored (dropped %d)", len(recent), log.Dropped())
	}
	st.Close()

	// Every byte of the database folder.
	var raw []byte
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	// Every decoded string of every event.
	var decoded strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			decoded.WriteString(v + "\n")
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for k, x := range v {
				decoded.WriteString(k + "\n")
				walk(x)
			}
		}
	}
	for _, e := range recent {
		for _, s := range []string{e.Request, e.Name, e.Principal, e.Message, e.Result, e.Reason, e.Code, e.Why} {
			decoded.WriteString(s + "\n")
		}
		for _, j := range [][]byte{e.Args, e.Budget} {
			var v any
			if len(j) > 0 {
				if err := json.Unmarshal(j, &v); err != nil {
					t.Fatalf("stored JSON %s: %v", j, err)
				}
			}
			walk(v)
		}
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the database file holds the secret %q", s)
		}
		if strings.Contains(decoded.String(), s) {
			t.Errorf("a stored event holds the secret %q", s)
		}
	}
	leaked := 0
	for _, m := range markers {
		if bytes.Contains(raw, []byte(m)) || strings.Contains(decoded.String(), m) {
			leaked++
		}
	}
	if leaked > 0 {
		t.Errorf("%d of %d values of secret-named fields are stored", leaked, len(markers))
	}
	for _, k := range keeps {
		if !bytes.Contains(raw, []byte(k)) {
			t.Fatalf("the harmless value %s was not stored: the redactor removes too much", k)
		}
	}
	t.Logf("%d events, %d secret-named values, %d registered secrets: nothing stored", len(recent), len(markers), len(secrets))
}

// TestResultCutInsideSecretMasked: a result larger than MaxResultBytes is
// cut for the model, and its summary is its first 100 bytes, and either
// cut may fall inside a secret it spells. They were masked after the cut,
// where the secret's first part, followed by the cut's ellipsis, was no
// text's end nor a whole value: the model read all of a secret but its
// last bytes. Each cut from one byte into the secret to its last byte
// shows no 8 bytes of it in a row, in the result or its summary.
func TestResultCutInsideSecretMasked(t *testing.T) {
	const secret = "sk-live-0123456789abcdefghijklmnopqrstuv"
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1024
	rt := reach.New(&reach.Options{Redactor: red, MaxResultBytes: limit})
	var pad int // each call a request of its own: the same result again is a loop
	rt.MustRegister(reach.Tool{Name: "dump", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		b, _ := json.Marshal(strings.Repeat("y", pad) + secret + strings.Repeat("z", 2*limit))
		return b, nil
	}}, reach.Tool{Name: "rows", Access: reach.Read, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		b, _ := json.Marshal([]string{strings.Repeat("y", pad), secret + strings.Repeat("z", 2*limit)})
		return b, nil
	}})
	pads := func(yield func(int) bool) {
		for _, cut := range []int{100, limit} { // the summary's, the result's
			for p := cut - 8 - len(secret); p < cut; p++ {
				if !yield(p) {
					return
				}
			}
		}
	}
	for pad = range pads {
		for _, tool := range []string{"dump", "rows"} {
			ctx, _ := begin(t, rt, nil)
			res := call(rt, ctx, tool, `{}`)
			if res.IsError() {
				t.Fatalf("%s: %s", tool, res.ModelText())
			}
			shown := res.ModelText() + "\n" + res.Summary
			for i := 0; i+8 <= len(secret); i++ {
				if strings.Contains(shown, secret[i:i+8]) {
					t.Fatalf("%s, padded %d: the model reads %q of the secret:\n...%s", tool, pad, secret[i:i+8], shown[max(0, len(shown)-120):])
				}
			}
		}
	}
}
