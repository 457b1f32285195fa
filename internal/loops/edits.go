package loops

// An edit that changes nothing the next run can see does not excuse the
// same failure. Writes to one thing (a file, a notebook's cell) that each
// write other contents, each followed by the same call failing the same
// way (one traceback, one error once its counters are masked), are tries
// that change nothing: after ErrorStreak of them, the next write to that
// thing is refused, as the next value tried for one complaint is.

// editStreak is an agent's writes to one entity, each followed by the same
// failure.
type editStreak struct {
	entity  uint64 // writeEntity of the writes
	named   uint64 // the value that names it (entityName), respelled
	agent   uint64
	fail    uint64 // the call that failed and its error's template
	key     uint64 // the call that failed
	count   int    // writes to entity each followed by the failure
	pending bool   // a write to entity was made since the failure was last counted
	tool    string // the tool that failed
	last    string // its failure
}

// writeEntity returns what write s changes, its contents aside: its tool
// and the values of its key fields (Step.Key, or the arguments named like
// identifiers or positions, cell_index, and those naming a path,
// file_path); 0 when it names none, or its arguments are too long to read.
func (d *Detector) writeEntity(s *Step) uint64 {
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0
	}
	return entityOf(s, as.out)
}

// entityOf is writeEntity of write s's scanned arguments as.
func entityOf(s *Step, as []leaf) uint64 {
	h, named := hashString(s.Tool), false
	for i := range as {
		l := &as[i]
		ok := false
		if len(s.Key) > 0 {
			for _, k := range s.Key {
				ok = ok || string(l.key) == k
			}
		} else {
			ok = identKey(l.key) || pathKey(l.key)
		}
		if ok && l.kind != leafLiteral {
			h, named = mix(h, mix(hashBytes(l.key), respelled(l.raw, l.val))), true
		}
	}
	if !named {
		return 0
	}
	return h | 1
}

// pathKey reports whether an argument's key names a file by its path:
// path, file, file_path, filePath, filename.
func pathKey(k []byte) bool {
	var w keyWords
	switch string(w.last(k)) {
	case "path", "file", "filename":
		return true
	}
	return false
}

// doneEdit counts step s's outcome in the agent's edit streak; ent is
// its writeEntity when it is a successful write.
func (d *Detector) doneEdit(a *agentState, s *Step, o *Outcome, write bool, ent uint64) {
	e := &d.edits
	if write && o.Error && (ent == 0 || ent != e.entity) {
		// A write that failed wrote nothing: a command run after each edit
		// through a tool that may write (a shell's test run) failing the
		// same way is the run that fails, as a read's would be.
		write = false
	}
	if write {
		if o.Error {
			return
		}
		if ent == 0 || ent != e.entity || e.agent != a.id {
			*e = editStreak{entity: ent, agent: a.id, named: d.entityName(s)}
		}
		e.pending = e.entity != 0
		return
	}
	if e.entity == 0 || e.agent != a.id && (e.named == 0 || !d.argsName(s.Args, e.named)) {
		// Another agent's call is the run of the edited thing when it
		// names it (an executor running the file a coder wrote, in one
		// group chat); an unrelated call of another agent is not.
		return
	}
	if !o.Error {
		if e.key == s.key {
			e.count = 0 // the run got through
		}
		return
	}
	f := mix(s.key, mix(hashString(o.ErrorType), d.template(o.Result, s.Args)))
	switch {
	case e.count > 0 && f == e.fail:
		if e.pending {
			e.count++
		}
	case e.pending:
		e.fail, e.key, e.count, e.tool = f, s.key, 1, s.Tool
	default:
		return
	}
	e.pending = false
	e.last = preview(o.Result)
}

// checkEdit refuses write s to the entity of the agent's edit streak once
// ErrorStreak writes there were each followed by the same failure.
func (d *Detector) checkEdit(a *agentState, s *Step) *Verdict {
	e := &d.edits
	max := d.cfg.errorStreak
	if max == 0 || e.count < max || e.pending || e.agent != a.id || !isWrite(s.Access) || d.writeEntity(s) != e.entity {
		return nil
	}
	return &Verdict{
		Detector: "same_error",
		Message: "the last " + plural(e.count, "write", "writes") + " of " + s.Tool + " to the same target were each followed by " +
			e.tool + " failing the same way (" + e.last + "); " + s.Tool + " " + preview(s.Args) +
			" is one more change that the failure does not see.",
		Suggestion: "Read the error and what it names (the line, the value, the missing name) before changing anything else: " +
			"fix what it points at, or tell the user what blocks you.",
	}
}

// entityName is the value of write s's first key field (as entityOf
// reads them: Step.Key, or an identifier's or a path's), respelled; 0 for
// none.
func (d *Detector) entityName(s *Step) uint64 {
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0
	}
	for i := range as.out {
		l := &as.out[i]
		ok := false
		if len(s.Key) > 0 {
			for _, k := range s.Key {
				ok = ok || string(l.key) == k
			}
		} else {
			ok = identKey(l.key) || pathKey(l.key)
		}
		if ok && l.kind != leafLiteral {
			return respelled(l.raw, l.val) | 1
		}
	}
	return 0
}

// argsName reports whether arguments args hold a value that, respelled,
// is named.
func (d *Detector) argsName(args []byte, named uint64) bool {
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	for i := range as.out {
		l := &as.out[i]
		if l.kind != leafLiteral && respelled(l.raw, l.val)|1 == named {
			return true
		}
	}
	return false
}
