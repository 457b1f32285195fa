package ui

import (
	"net/http"
	"net/url"
	"slices"
	"time"
)

// DeadLetter is a compensation that failed and waits for an operator, as
// the dead letters page shows it: its arguments masked.
type DeadLetter struct {
	ID, Request, Tool, Args, Error, State, Note string
	Attempts                                    int
	Updated                                     time.Time
}

// DeadLetters is the queue of failed compensations the dead letters page
// lists, retries and dismisses through, as GET and POST /v1/deadletters
// do for the sender of r (operators only: another is answered an error
// saying so). An error's text is shown to the user.
type DeadLetters interface {
	List(r *http.Request, state string) ([]DeadLetter, error)
	Retry(r *http.Request, id string) error
	Dismiss(r *http.Request, id, note string) error
}

// deadLetterStates are the states the page filters on ("all" for each).
var deadLetterStates = []string{"open", "taken", "retried", "resolved", "all"}

var deadLetterFlashes = map[string]string{
	"retried":     "%s ran again and succeeded.",
	"dismissed":   "%s is dismissed, with your note.",
	"not_retried": "%s was not retried, or ran again and failed: its error is below (it may be taken by another action, or settled already).",
	"not_dismissed": "%s was not dismissed: it may be taken by another action or settled already, " +
		"or it is not yours to settle.",
	"no_note": "A dismissal says how %s was settled: write it in the note.",
}

type deadLetterView struct {
	DeadLetter
	At   when
	Open bool
}

func (u *UI) deadLetters(w http.ResponseWriter, r *http.Request) {
	state := r.FormValue("state")
	if !slices.Contains(deadLetterStates, state) {
		state = "open"
	}
	data := struct {
		page
		Enabled bool
		Err     string
		State   string
		States  []string
		Items   []deadLetterView
	}{page: u.page(r, "Dead letters", "deadletters", ""), Enabled: u.o.DeadLetters != nil, State: state, States: deadLetterStates}
	subject := "The dead letter"
	if u.o.DeadLetters != nil {
		ds, err := u.o.DeadLetters.List(r, state)
		if err != nil {
			data.Err = err.Error()
		}
		now := time.Now()
		for _, d := range ds {
			data.Items = append(data.Items, deadLetterView{DeadLetter: d, At: newWhen(d.Updated, now), Open: d.State == "open"})
			if d.ID == r.URL.Query().Get("id") {
				subject = d.ID
			}
		}
	}
	data.Flash = flash(r, deadLetterFlashes, subject)
	u.render(w, r, "deadletters", data)
}

func (u *UI) settleDeadLetter(w http.ResponseWriter, r *http.Request) {
	if u.o.DeadLetters == nil {
		http.Error(w, "this gateway shows no dead letters", http.StatusNotFound)
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	var code string
	switch action {
	case "retry":
		code = "retried"
		if err := u.o.DeadLetters.Retry(r, id); err != nil {
			code = "not_retried"
			u.log.Info("a retry of a dead letter from the UI did not succeed", "dead_letter", id, "by", u.actor(r).Principal, "err", err)
		}
	case "dismiss":
		code = "dismissed"
		if note := r.FormValue("note"); note == "" {
			code = "no_note"
		} else if err := u.o.DeadLetters.Dismiss(r, id, note); err != nil {
			code = "not_dismissed"
			u.log.Info("a dismissal of a dead letter from the UI was not recorded", "dead_letter", id, "by", u.actor(r).Principal, "err", err)
		}
	default:
		http.Error(w, "action must be retry or dismiss", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, "/ui/deadletters?flash="+code+"&id="+url.QueryEscape(id), http.StatusSeeOther)
}
