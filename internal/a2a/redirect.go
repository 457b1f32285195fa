package a2a

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentreach/reach/internal/origin"
)

// sameOrigin returns a CheckRedirect that follows an agent's redirect only
// within the origin reach called (its scheme, host and port, or up to
// https on the same host), then asks next (net/http's 10 at most if nil).
// Off it, the call fails: the callers' messages and reach's ids would go
// to a host the operator never configured on the agent's word alone, as
// reach does not follow a card that moves the agent's interface elsewhere.
func sameOrigin(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !origin.KeyGoesTo(via[0].URL, req.URL) {
			return fmt.Errorf("the agent redirected reach's call to another origin (%s://%s), which reach does not follow: set the agent's url to where it answers", req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}
