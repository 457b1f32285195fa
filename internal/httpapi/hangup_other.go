//go:build !unix

package httpapi

import (
	"context"
	"net"
)

// hangup cannot watch a connection here without reading from it: the
// requests that need a watch go to net/http.
type hangup struct{}

func watchHangup(context.Context, net.Conn) (context.Context, *hangup, bool) { return nil, nil, false }

func (*hangup) stop() {}
