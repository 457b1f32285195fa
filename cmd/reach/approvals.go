package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/origin"
	"github.com/agentreach/reach/internal/policy/approval"
)

// newApprovals is `reach approvals list|approve|deny`, a client of the
// gateway's approvals API.
func newApprovals() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, approve and deny calls waiting for a human",
		Long: `Calls that need approval wait in the gateway until someone decides. Without
auth, a high-risk call waits for the local user (reads and writes run); with
auth and the shipped policies, a write waits for its user and a high-risk call
for its user and a reviewer; a policy file decides by its @approval annotations.
These commands talk to the gateway's API (GET /v1/approvals, POST
/v1/approvals/{id}/approve|deny) with the API key in --key or $REACH_API_KEY.`,
	}
	client := apiFlags(cmd)

	var status string
	var all, asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the approvals you may decide (pending ones unless --all or --status)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if !all {
				q.Set("status", status)
			}
			var out struct {
				Approvals []approval.View `json:"approvals"`
			}
			raw, err := client().do(cmd.Context(), http.MethodGet, "/v1/approvals?"+q.Encode(), nil, &out)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				_, err := w.Write(printableJSON(raw))
				return err
			}
			if len(out.Approvals) == 0 {
				fmt.Fprintln(w, "no approvals")
				return nil
			}
			for i, a := range out.Approvals {
				if i > 0 {
					fmt.Fprintln(w)
				}
				fmt.Fprint(w, prompt(a))
			}
			return nil
		},
	}
	list.Flags().StringVar(&status, "status", "pending", "pending, approved, used, denied or expired")
	list.Flags().BoolVar(&all, "all", false, "every status")
	list.Flags().BoolVar(&asJSON, "json", false, "print the API's JSON")

	decide := func(verb string) *cobra.Command {
		var reason string
		c := &cobra.Command{
			Use:  verb + " ID",
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				body, _ := json.Marshal(map[string]string{"reason": reason})
				var a approval.View
				if _, err := client().do(cmd.Context(), http.MethodPost, "/v1/approvals/"+url.PathEscape(args[0])+"/"+verb, body, &a); err != nil {
					return err
				}
				fmt.Fprint(cmd.OutOrStdout(), prompt(a))
				if a.Notice != "" {
					fmt.Fprintln(cmd.OutOrStdout(), printable(a.Notice))
				}
				return nil
			},
		}
		c.Flags().StringVar(&reason, "reason", "", "why (the agent is told a denial's reason)")
		return c
	}
	approve := decide("approve")
	approve.Short = "Approve a call (with auth, a high-risk call needs its user and a reviewer)"
	deny := decide("deny")
	deny.Short = "Deny a call; the agent is told the reason"
	deny.Flags().Lookup("reason").Usage = "why, which the agent is told (required)"
	deny.MarkFlagRequired("reason")
	cmd.AddCommand(list, approve, deny)
	return cmd
}

// prompt renders an approval for the terminal. The gateway's prompt is
// not printed as it is: it is laid out again here from the approval's
// fields, each escaped, so that no field (the agent's why, the arguments,
// a request id) can add a line, rewrite one, or move the cursor to change
// what the human approves.
func prompt(v approval.View) string {
	a := v.Approval
	for _, s := range []*string{&a.ID, &a.Requires, &a.Operation, &a.Tool, &a.Undo, &a.Principal,
		&a.Tenant, &a.Scene, &a.Agent, &a.Request, &a.RootRequest, &a.Why, &a.Note} {
		*s = printable(*s)
	}
	a.Status = approval.Status(printable(string(a.Status)))
	a.Access = reach.Access(printable(string(a.Access)))
	a.Arguments = json.RawMessage(printable(string(a.Arguments)))
	a.Writes = slices.Clone(a.Writes)
	for i := range a.Writes {
		a.Writes[i] = printable(a.Writes[i])
	}
	vote := func(v approval.Vote) approval.Vote {
		v.By, v.As, v.Reason = printable(v.By), printable(v.As), printable(v.Reason)
		return v
	}
	a.Votes = slices.Clone(a.Votes)
	for i := range a.Votes {
		a.Votes[i] = vote(a.Votes[i])
	}
	if a.Denial != nil {
		d := vote(*a.Denial)
		a.Denial = &d
	}
	return printableLines(a.Prompt()) // and a field added later, less its newlines
}

// apiClient calls the gateway's JSON API.
type apiClient struct {
	base, key string
	http      *http.Client
	// plainOK lets the key go to a plain http:// gateway off loopback
	// (--allow-plain-http, $REACH_ALLOW_PLAIN_HTTP).
	plainOK bool
	// err, if not nil, is what every request answers: the key could not
	// be read, or the address holds one.
	err error
}

// keyInTheClear returns an error if c would send its key in the clear: to
// a plain http:// gateway that is not loopback, without --allow-plain-http
// ($REACH_ALLOW_PLAIN_HTTP), as the configuration refuses a model's key.
func (c *apiClient) keyInTheClear() error {
	if c.key == "" || c.plainOK {
		return nil
	}
	u, err := url.Parse(c.base)
	if err != nil || !origin.PlainOffLoopback(u) {
		return nil
	}
	return fmt.Errorf("refusing to send the API key in the clear to %s, a plain http:// gateway that is not loopback: "+
		"use its https:// address, or pass --allow-plain-http (or set REACH_ALLOW_PLAIN_HTTP=1) to send it so knowingly (a network you trust end to end)",
		(&url.URL{Scheme: u.Scheme, Host: u.Host}).String())
}

// do sends a request and decodes the answer into out (unless out is nil:
// then the answer is only returned); an error answer becomes an error
// carrying the API's message and suggestion.
func (c *apiClient) do(ctx context.Context, method, path string, body []byte, out any) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if err := c.keyInTheClear(); err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, noAnswer(c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message, Suggestion string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg := printable(e.Error.Message)
			switch {
			// The API's suggestion speaks of headers; whoever runs a
			// command passes a key another way.
			case resp.StatusCode == http.StatusUnauthorized && c.key == "":
				msg += " Pass an API key with --key or in $REACH_API_KEY (reach keys create makes one)."
			case resp.StatusCode == http.StatusUnauthorized:
				msg += " Check the key in --key or $REACH_API_KEY (reach keys list shows the keys of a data folder)."
			case e.Error.Suggestion != "":
				msg += " " + printable(e.Error.Suggestion)
			}
			return nil, fmt.Errorf("%s (%s)", msg, printable(resp.Status))
		}
		return nil, notReach(c.base, method+" "+path, resp)
	}
	if out == nil {
		return raw, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return raw, nil
}
