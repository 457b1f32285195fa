package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentreach/reach/internal/store"
)

// kill21Shop is an upstream whose add_item is a write that takes effect
// at once and, the first time for an item named "slow ...", answers two
// seconds later whatever its caller does (a tool deaf to its context).
type kill21Shop struct {
	url   string
	mu    sync.Mutex
	runs  map[string]int
	began chan string
}

func newKill21Shop(t *testing.T) *kill21Shop {
	sh := &kill21Shop{runs: map[string]int{}, began: make(chan string, 8)}
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add_item", Description: "Add an item to the cart."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			Item string `json:"item"`
		}) (*mcp.CallToolResult, any, error) {
			sh.mu.Lock()
			sh.runs[in.Item]++
			n := sh.runs[in.Item]
			sh.mu.Unlock()
			if n == 1 && strings.HasPrefix(in.Item, "slow") {
				sh.began <- in.Item
				select {
				case <-time.After(2 * time.Second):
				case <-t.Context().Done():
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + in.Item}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	sh.url = up.URL
	return sh
}

func (sh *kill21Shop) ran(item string) int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.runs[item]
}

// add calls add_item in a request of its own (no request id, no key), as
// an HTTP client's retry does, and gives its status and error.
func (sh *kill21Shop) add(t *testing.T, base, item string) (string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"call_id": "c1", "tool": "shop__add_item", "arguments": map[string]any{"item": item}}}})
	_, out := postJSON(t, base+"/v1/calls", string(body))
	res, _ := out["results"].([]any)
	if len(res) != 1 {
		t.Fatalf("add_item %s: %v", item, out)
	}
	r, _ := res[0].(map[string]any)
	return fmt.Sprint(r["status"]), fmt.Sprint(r["error"])
}

// dropWhileRunning sends add_item item in request r and hangs up once the
// tool began; it returns when the gateway ended the call cancelled, or
// when stop is closed (the gateway killed first).
func (sh *kill21Shop) dropWhileRunning(t *testing.T, base, item string, stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/calls",
			strings.NewReader(`{"request_id":"r","tool_calls":[{"call_id":"c1","tool":"shop__add_item","arguments":{"item":"`+item+`"}}]}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-sh.began
	cancel()
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := http.Get(base + "/v1/requests/r")
		if err != nil {
			continue
		}
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if strings.Contains(fmt.Sprint(v["frames"]), "status:cancelled") {
			return
		}
	}
}

// TestKill21CutOffPoints kills `reach serve` (kill -9) right after a write
// cut off before its answer was delivered is stored (cutoff.noted), and
// right after its retry took it from the store (cutoff.taken), before the
// retry is answered; then restarts it over the same data (SQLite) and
// checks docs/STATE.md's rows for them, and the sweep's checks
// (crashRun.checkAll: nothing twice, no request left running, the audit
// chain verifies, no claim left).
func TestKill21CutOffPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	t.Run("cutoff.noted", func(t *testing.T) { killAtCutOffNoted(t, "") })
	t.Run("cutoff.taken", func(t *testing.T) {
		sh := newKill21Shop(t)
		cfg := writeConfig(t, "upstreams:\n  - {name: shop, url: '"+sh.url+"'}\ntools:\n  shop__add_item: {access: write}\n")
		h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil)}
		addr := freeAddr(t)
		h.base = "http://" + addr
		cmd := startReach(t, cfg, addr, h.data)
		killAtEnd(t, cmd)
		sh.dropWhileRunning(t, h.base, "slow pear", nil)
		stopServe(t, cmd, syscall.SIGTERM)
		cmd, reached := startReachAt(t, cfg, addr, h.data, "cutoff.taken")
		killAtEnd(t, cmd)
		go func() {
			body := `{"tool_calls":[{"call_id":"c1","tool":"shop__add_item","arguments":{"item":"slow pear"}}]}`
			if resp, err := http.Post(h.base+"/v1/calls", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		}()
		select {
		case <-reached:
		case <-time.After(time.Minute):
			t.Fatal("the gateway never reached cutoff.taken")
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cmd = startReach(t, cfg, addr, h.data)
		killAtEnd(t, cmd)
		// The retry taken was never answered: the next one is answered
		// interrupted, once, and nothing ran twice; the one after runs.
		st, e := sh.add(t, h.base, "slow pear")
		t.Logf("the retry after the restart: %s %s", st, e)
		if n := sh.ran("slow pear"); n != 1 {
			t.Errorf("the write ran %d times after the retry after the restart; want 1", n)
		}
		if st == "success" || !strings.Contains(e, "was cut off before its answer was delivered") {
			t.Errorf("the retry after the restart: %s %s; want the error interrupted", st, e)
		}
		if st, e := sh.add(t, h.base, "slow pear"); st != "success" {
			t.Errorf("called again: %s %s; want it run", st, e)
		}
		if n := sh.ran("slow pear"); n != 2 {
			t.Errorf("the write ran %d times after it was called again; want 2", n)
		}
		h.checkAll(t, cmd)
	})
}

// killAtCutOffNoted is TestKill21CutOffPoints' case cutoff.noted over the
// PostgreSQL database url, or SQLite if "".
func killAtCutOffNoted(t *testing.T, url string) {
	sh := newKill21Shop(t)
	cfg := writeConfig(t, storeHead(url)+"upstreams:\n  - {name: shop, url: '"+sh.url+"'}\ntools:\n  shop__add_item: {access: write}\n")
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	addr := freeAddr(t)
	h.base = "http://" + addr
	cmd, reached := startReachAt(t, cfg, addr, h.data, "cutoff.noted")
	killAtEnd(t, cmd)
	stop := make(chan struct{})
	go sh.dropWhileRunning(t, h.base, "slow pear", stop)
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("the gateway never reached cutoff.noted")
	}
	close(stop)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	cmd = startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if url != "" {
		h.recovered(t)
	}
	// The retry is answered interrupted once, nothing run; the next runs.
	if st, e := sh.add(t, h.base, "slow pear"); st == "success" || !strings.Contains(e, "was cut off before its answer was delivered") {
		t.Errorf("the retry after the restart: %s %s; want the error interrupted", st, e)
	}
	if n := sh.ran("slow pear"); n != 1 {
		t.Errorf("the write ran %d times after its retry; want 1", n)
	}
	if st, e := sh.add(t, h.base, "slow pear"); st != "success" {
		t.Errorf("called again: %s %s; want it run", st, e)
	}
	if n := sh.ran("slow pear"); n != 2 {
		t.Errorf("the write ran %d times after it was called again; want 2", n)
	}
	h.checkAll(t, cmd)
}

// TestKill21KeptAside kills `reach serve` (kill -9) at its start, right
// after it moved the unreadable lines of the kept completions' file a stop
// left aside (kept.aside), before it removed the file; then starts it
// again over the same data: the file is gone, the unreadable lines are in
// the file next to it once (before, twice: the second start appended them
// again), and its readable line, whose claim is gone, is dropped again.
func TestKill21KeptAside(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	killAtKeptAside(t, "")
}

// killAtKeptAside is TestKill21KeptAside over the PostgreSQL database
// url, or SQLite if "".
func killAtKeptAside(t *testing.T, url string) {
	sh := newKill21Shop(t)
	cfg := writeConfig(t, storeHead(url)+"upstreams:\n  - {name: shop, url: '"+sh.url+"'}\ntools:\n  shop__add_item: {access: write}\n")
	h := &crashRun{data: t.TempDir(), fx: newSideEffects(nil), store: url}
	addr := freeAddr(t)
	h.base = "http://" + addr
	cmd := startReach(t, cfg, addr, h.data) // the store made
	killAtEnd(t, cmd)
	stopServe(t, cmd, syscall.SIGTERM)
	path := filepath.Join(h.data, store.KeptFile)
	if url != "" { // instances may share a data folder: the file names its instance
		path = filepath.Join(h.data, strings.TrimSuffix(store.KeptFile, ".jsonl")+"-a.jsonl")
	}
	middle, end := `{"owner":"reach/x","key":"k-9",result}`, `{"owner":"reach/x","key":"k-8","res`
	left := `{"owner":"reach/x","key":"k-7","args":"a","result":{"status":"success"},"expires":"2099-01-01T00:00:00Z"}`
	if err := os.WriteFile(path, []byte(left+"\n"+middle+"\n"+left+"\n"+end), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, reached := startReachAt(t, cfg, addr, h.data, "kept.aside")
	killAtEnd(t, cmd)
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("the gateway never reached kept.aside")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the kept file after a kill at kept.aside: %v; want it still there", err)
	}
	cmd = startReach(t, cfg, addr, h.data)
	killAtEnd(t, cmd)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the kept file after the restart: %v; want it removed", err)
	}
	if b, _ := os.ReadFile(store.KeptAside(path)); string(b) != middle+"\n"+end+"\n" {
		t.Errorf("the file of the unreadable lines holds %q; want both lines, once", b)
	}
	if st, e := sh.add(t, h.base, "apple"); st != "success" {
		t.Errorf("a write after the restart: %s %s; want it run", st, e)
	}
	h.checkAll(t, cmd)
}

// TestKill21LateEndDeadLettered is TestFleet21LateEndAfterRecovery with a
// real kill -9 where that test rewrites the kept file: a's successor is
// killed right after it dead-lettered the late end's undo
// (deadletter.late), before it removed the kept file. The next start
// writes the end again and adds no second dead letter; the file is then
// removed; the undo has not run; each write ran once; the chain verifies.
func TestKill21LateEndDeadLettered(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f, g, kept := keptEndThroughOutage(t)
	if err := f.pg.Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); storedRequest(t, f.url, "r-chain").State != "interrupted"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("b did not recover a's request: it is stored %s", storedRequest(t, f.url, "r-chain").State)
		}
	}
	cmd, reached := startReachAt(t, f.cfg[0], f.addr[0], f.data[0], "deadletter.late")
	killAtEnd(t, cmd)
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("a's successor never reached deadletter.late")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the kept file after a kill at deadletter.late: %v; want it still there", err)
	}
	if dls := undoDeadLetters(t, f.url, "r-chain"); len(dls) != 1 || dls[0].State != "open" {
		t.Fatalf("the dead letters of r-chain after the kill: %+v; want one open", dls)
	}
	f.start(0)
	servesAgain(t, f, 0)
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("the kept file after the restart: %v; want it removed", err)
	}
	if dls := undoDeadLetters(t, f.url, "r-chain"); len(dls) != 1 || dls[0].Tool != "up__unbook" || dls[0].State != "open" {
		t.Errorf("the dead letters of r-chain after the restart: %+v; want still one, open, of up__unbook", dls)
	}
	if n := f.up.count("unbook g2"); n != 0 {
		t.Errorf("the late undo ran %d times with no operator's retry; want 0", n)
	}
	if n, m := g.count("g2"), f.up.count("book k1"); n != 1 || m != 1 {
		t.Errorf("the writes ran %d and %d times; want once each", m, n)
	}
	if n := f.up.count("unbook k1"); n != 1 {
		t.Errorf("the first write's undo ran %d times; want once", n)
	}
	verifyAudit(t, f.url)
}

// TestKill21CutOffTakenOnPostgres is TestKill21CutOffPoints' cutoff.taken
// on two instances sharing one PostgreSQL: a write is cut off on a, its
// keyless retry reaches b, which takes the cut-off write for it and is
// killed (kill -9) at cutoff.taken, before the retry is answered. The next
// identical retry, through a, is answered interrupted and nothing runs
// twice. Before, b's take had deleted the write, and
// its claim had no checkpoint for recovery to note it by: the next retry
// ran the write a second time.
func TestKill21CutOffTakenOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("several processes and a PostgreSQL cluster: skipped in -short mode")
	}
	f := newFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", f.base(0)+"/v1/calls",
			strings.NewReader(`{"request_id":"drop21","tool_calls":[{"call_id":"c1","tool":"up__hold","arguments":{"key":"pear"}}]}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-f.up.started
	cancel() // the connection to a drops
	for i := 0; !strings.Contains(fmt.Sprint(getJSONTB(t, f.base(0)+"/v1/requests/drop21")["frames"]), "status:cancelled"); i++ {
		if i == 3000 {
			t.Fatal("the call whose client hung up was never ended on a")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.kill(1)
	cmd, reached := startReachAt(t, f.cfg[1], f.addr[1], f.data[1], "cutoff.taken")
	killAtEnd(t, cmd)
	go func() {
		body := `{"request_id":"retry21","tool_calls":[{"call_id":"c1","tool":"up__hold","arguments":{"key":"pear"}}]}`
		if resp, err := http.Post(f.base(1)+"/v1/calls", "application/json", strings.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("b never reached cutoff.taken")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r := callHTTP(t, f.base(0), "retry21b", "c1", "up__hold", `{"key":"pear"}`, "")
	if errCode(r) != "interrupted" || !strings.Contains(fmt.Sprint(r["error"]), "was cut off before its answer was delivered") {
		t.Errorf("the retry through a after b was killed: %v; want the error interrupted", r)
	}
	if n := f.up.count("hold pear"); n != 1 {
		t.Errorf("the write ran %d times after the next retry; want 1", n)
	}
}
