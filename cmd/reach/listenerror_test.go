package main

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// An address reach serve cannot listen on is an error that says what to
// do: an address no interface has (a real listen here, with auth so that
// any address may be served) and a low port this user may not bind (as a
// non-root user meets it; the tests run as root, so its error is made).
// Both said the system's words alone.
func TestListenErrorsSayWhatToDo(t *testing.T) {
	config := writeConfig(t, "auth: {keys: true}\n")
	err := run(context.Background(), []string{"serve", "--config", config, "--listen", "192.0.2.1:0"}, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("serve on an address of no interface: no error")
	}
	for _, want := range []string{"listening on 192.0.2.1:0: no interface of this machine has that address", "serve on 127.0.0.1, or on an address of this machine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("serve: %v\nwant %q", err, want)
		}
	}

	// validate warns of it with the same advice.
	var out strings.Builder
	if err := run(context.Background(), []string{"validate", "--offline", "--config", writeConfig(t, "auth: {keys: true}\nlisten: 192.0.2.1:7400\n")}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := "warning: listen: reach serve could not start on this machine: listening on 192.0.2.1:7400: no interface of this machine has that address"; !strings.Contains(out.String(), want) {
		t.Errorf("validate:\n%s\nwant %q", out.String(), want)
	}

	denied := &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)}
	msg := listenError("127.0.0.1:80", denied).Error()
	for _, want := range []string{"listening on 127.0.0.1:80: this user may not serve on that port", "serve on a port from 1024 up, e.g. --listen 127.0.0.1:7400", "permission denied"} {
		if !strings.Contains(msg, want) {
			t.Errorf("listenError: %s\nwant %q", msg, want)
		}
	}
}
