package loops

import "testing"

// TestAlikeBatchThenAll: reads of one slot filled a new way each time
// (a config key in dev, staging, prod; people searched by name at one
// company), answered alike, then the same read with the slot left out,
// ask about all of them: not a respelling. Other legit batches go on too.
func TestAlikeBatchThenAll(t *testing.T) {
	cmd := func(c string) obj { return obj{"command": c} }
	sql := func(q string) obj { return obj{"sql": q} }
	cases := []struct {
		name  string
		tool  string
		calls [][2]any
	}{
		{"ls empty dirs then cwd", "run_command", [][2]any{
			{cmd("ls -la src/a"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls -la src/b"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls -la src/c"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls -la src"), obj{"exitCode": 0, "stdout": ""}},
		}},
		{"ls empty dirs then parent", "run_command", [][2]any{
			{cmd("ls /srv/data/a"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls /srv/data/b"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls /srv/data/c"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls /srv/data"), obj{"exitCode": 0, "stdout": ""}},
		}},
		{"ls then plain ls", "run_command", [][2]any{
			{cmd("ls a"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls b"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls c"), obj{"exitCode": 0, "stdout": ""}},
			{cmd("ls"), obj{"exitCode": 0, "stdout": ""}},
		}},
		{"config envs then default", "get_config", [][2]any{
			{obj{"key": "FEATURE_X", "env": "dev"}, obj{"value": nil, "found": false}},
			{obj{"key": "FEATURE_X", "env": "staging"}, obj{"value": nil, "found": false}},
			{obj{"key": "FEATURE_X", "env": "prod"}, obj{"value": nil, "found": false}},
			{obj{"key": "FEATURE_X"}, obj{"value": nil, "found": false}},
		}},
		{"health of services", "health", [][2]any{
			{obj{"service": "api"}, obj{"status": "ok"}},
			{obj{"service": "db"}, obj{"status": "ok"}},
			{obj{"service": "cache"}, obj{"status": "ok"}},
			{obj{"service": "api", "verbose": true}, obj{"status": "ok"}},
			{obj{}, obj{"status": "ok"}},
		}},
		{"count empty tables", "query", [][2]any{
			{sql("SELECT count(*) FROM orders"), arr{obj{"count": 0}}},
			{sql("SELECT count(*) FROM refunds"), arr{obj{"count": 0}}},
			{sql("SELECT count(*) FROM invoices"), arr{obj{"count": 0}}},
			{sql("SELECT count(*) FROM orders o JOIN refunds r ON r.order_id = o.id"), arr{obj{"count": 0}}},
			{sql("SELECT count(*) FROM pg_stat_activity"), arr{obj{"count": 0}}},
		}},
		{"people search", "search_people", [][2]any{
			{obj{"query": "Ann Lee", "company": "Acme"}, obj{"results": arr{}}},
			{obj{"query": "Bo Chen", "company": "Acme"}, obj{"results": arr{}}},
			{obj{"query": "Cy Diaz", "company": "Acme"}, obj{"results": arr{}}},
			{obj{"company": "Acme"}, obj{"results": arr{}}},
		}},
		{"crawl one template", "fetch", [][2]any{
			{obj{"url": "https://shop.example/p/1"}, obj{"title": "Shop", "body": "Loading..."}},
			{obj{"url": "https://shop.example/p/2"}, obj{"title": "Shop", "body": "Loading..."}},
			{obj{"url": "https://shop.example/p/3"}, obj{"title": "Shop", "body": "Loading..."}},
			{obj{"url": "https://shop.example/"}, obj{"title": "Shop", "body": "Loading..."}},
		}},
		{"grep in files", "run_command", [][2]any{
			{cmd("grep -n TODO src/a.go"), obj{"exitCode": 1, "stdout": ""}},
			{cmd("grep -n TODO src/b.go"), obj{"exitCode": 1, "stdout": ""}},
			{cmd("grep -n TODO src/c.go"), obj{"exitCode": 1, "stdout": ""}},
			{cmd("grep -rn TODO src"), obj{"exitCode": 1, "stdout": ""}},
		}},
	}
	for _, c := range cases {
		p := playCalls(c.tool, c.calls...)
		if p.v != nil {
			t.Errorf("%s: refused at %d: %s: %s", c.name, p.refusedAt, p.v.Detector, p.v.Message)
		}
	}
}

// TestAlikeOtherAgent: one agent's streak of respelled reads answered
// alike is its own: another agent on the same tool, asking in words the
// streak used, is not refused for it.
func TestAlikeOtherAgent(t *testing.T) {
	d := New(nil)
	out := []byte(`{"exitCode":0,"stdout":"cart.ts\ncheckout.ts\n"}`)
	call := func(agent, c string) *Verdict {
		s := &Step{Kind: ToolCall, Agent: agent, Tool: "run_command", Access: "read", Args: []byte(`{"command":"` + c + `"}`)}
		if v := d.Check(s); v != nil {
			return v
		}
		d.Done(s, Outcome{Result: out})
		return nil
	}
	for _, c := range []string{"ls -la src/lib", "ls -la /home/dev/shop/src/lib", "find src/lib -maxdepth 1"} {
		if v := call("main", c); v != nil {
			t.Fatalf("%s refused: %s", c, v.Message)
		}
	}
	if v := call("reviewer", "ls src/lib -l"); v != nil {
		t.Errorf("another agent's read refused for the main agent's streak: %s: %s", v.Detector, v.Message)
	}
}
