package front

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
)

// The D-Bus front end: the bus name it owns, its object and interface.
const (
	DBusName  = "org.unitrun.Ops1"
	DBusPath  = dbus.ObjectPath("/org/unitrun/Ops1")
	DBusIface = "org.unitrun.Ops1"
)

// dbusCancelWait bounds how long Cancel waits for the job to end.
const dbusCancelWait = 5 * time.Minute

// dbusIntrospection describes the object for busctl introspect and
// other D-Bus tools.
const dbusIntrospection = `<node>
 <interface name="org.unitrun.Ops1">
  <method name="Call"><arg name="op" type="s" direction="in"/><arg name="args" type="as" direction="in"/><arg name="job_id" type="s" direction="out"/></method>
  <method name="Get"><arg name="job_id" type="s" direction="in"/><arg name="record" type="a{sv}" direction="out"/></method>
  <method name="Wait"><arg name="job_id" type="s" direction="in"/><arg name="record" type="a{sv}" direction="out"/></method>
  <method name="List"><arg name="jobs" type="a(ssss)" direction="out"/></method>
  <method name="Cancel"><arg name="job_id" type="s" direction="in"/><arg name="record" type="a{sv}" direction="out"/></method>
  <method name="Subscribe"><arg name="job_id" type="s" direction="in"/></method>
  <signal name="Finished"><arg name="job_id" type="s"/><arg name="success" type="b"/><arg name="exit_status" type="i"/><arg name="message" type="s"/></signal>
 </interface>` + introspect.IntrospectDataString + `</node>`

// ServeDBus serves the D-Bus front end of c on conn: it exports DBusPath
// with interface DBusIface and claims DBusName, failing when another
// connection owns it. Calls are served until conn is closed.
//
// Methods (see docs/hostapi.md):
//
//	Call(s op, as args) -> s job_id     start a job, as POST /v1/ops/{op}
//	Get(s job_id) -> a{sv} record       the record, its keys those of the JSON record
//	Wait(s job_id) -> a{sv} record      the record once the job has ended
//	List() -> a(ssss)                   (id, op, state, message) of the visible jobs, newest first
//	Cancel(s job_id) -> a{sv} record    cancel; the record once the job has ended
//	Subscribe(s job_id)                 have Finished sent to the caller, at once if the job has ended
//
// Signal Finished(s job_id, b success, i exit_status, s message) is sent,
// addressed to each connection that called the op or subscribed to the job
// (never broadcast, so that no one learns of jobs they may not see), once
// per connection however often it subscribed. exit_status is the record's
// exit_code (128+N for a signal N, as on every face: unit.Exit.JSON), or -1
// when no process ran. The connections of one uid await at most
// max_subscriptions_per_uid jobs by Subscribe at once; one more Subscribe
// is refused as busy.
//
// When a connection leaves the bus (its unique name vanishes, however it
// went), its subscriptions end, and each job it called that is still queued
// or running is canceled if its op has on_disconnect "stop" and no other
// caller holds it (a connection that called it too and stays, or a
// waiting caller of another front end: core.Core's Hold).
//
// Each call is authorized by the sender's credentials as the bus reports
// them (GetConnectionCredentials: uid, gids, pid) with the rules of the
// other front ends. Errors are named "org.unitrun.Ops1.Error.<code>" (such
// as org.unitrun.Ops1.Error.unauthorized), with the message as their text.
func ServeDBus(c core.Core, conn *dbus.Conn) error {
	a := &dbusAPI{c: c, conn: conn, maxSubs: c.Config().Limits.MaxSubscriptionsPerUID,
		subs: make(map[string]map[string]uint32), subsOf: make(map[uint32]int), calledBy: make(map[string]map[string]func(bool))}
	c.OnFinish(func(r *api.Record) { go a.finished(r) })
	// Every connection that leaves the bus, before any call is served, so
	// that no caller leaves unseen.
	if err := conn.AddMatchSignal(dbus.WithMatchSender("org.freedesktop.DBus"), dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"), dbus.WithMatchArg(2, "")); err != nil {
		return fmt.Errorf("D-Bus: watching callers leave: %w", err)
	}
	gone := make(chan *dbus.Signal, 64)
	conn.Signal(gone)
	go a.watchGone(gone)
	if err := conn.Export(a, DBusPath, DBusIface); err != nil {
		return fmt.Errorf("D-Bus: %w", err)
	}
	if err := conn.Export(introspect.Introspectable(dbusIntrospection), DBusPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		return fmt.Errorf("D-Bus: %w", err)
	}
	reply, err := conn.RequestName(DBusName, dbus.NameFlagDoNotQueue)
	if err != nil {
		return fmt.Errorf("D-Bus: claiming %s: %w", DBusName, err)
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		return fmt.Errorf("D-Bus: claiming %s: another connection owns it", DBusName)
	}
	return nil
}

// dbusAPI is the exported object. Its exported methods are the D-Bus
// methods.
type dbusAPI struct {
	c       core.Core
	conn    *dbus.Conn
	maxSubs int // subscriptions of one uid (max_subscriptions_per_uid)

	mu       sync.Mutex
	subs     map[string]map[string]uint32     // job id: unique name to send its Finished to: its uid
	subsOf   map[uint32]int                   // uid: the jobs its connections await, called or subscribed to
	calledBy map[string]map[string]func(bool) // id of a live job called here: each caller's unique name: its hold's release (core.Core's Hold)
}

// jobSummary is an entry of List.
type jobSummary struct {
	ID, Op, State, Message string
}

// Call starts the op with args for the sender, who then gets the job's
// Finished signal. The op name and args are held to max_request_bytes as
// a SEQPACKET packet of them is.
func (a *dbusAPI) Call(sender dbus.Sender, op string, args []string) (string, *dbus.Error) {
	c, derr := a.caller(sender)
	if derr != nil {
		return "", derr
	}
	if n, limit := api.RequestBytes(op, args), a.c.Config().Limits.MaxRequestBytes; n > limit {
		return "", dbusError(errorf(api.CodeTooLarge, fmt.Sprintf("request: op name and args of %d bytes (each with a NUL after it), larger than the limit of %d bytes (max_request_bytes)", n, limit)))
	}
	rec, err := a.c.CallKeyed(context.Background(), c, op, args, "")
	if err != nil {
		return "", dbusError(err)
	}
	a.mu.Lock()
	if a.calledBy[rec.ID] == nil {
		a.calledBy[rec.ID] = make(map[string]func(bool))
	}
	if a.calledBy[rec.ID][string(sender)] == nil {
		a.calledBy[rec.ID][string(sender)] = a.c.Hold(rec.ID)
	}
	a.mu.Unlock()
	a.subscribe(string(sender), c.UID, rec.ID, false)
	// A caller that left before it was noted as the job's caller: its
	// NameOwnerChanged may have come first.
	var has bool
	if err := a.conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, string(sender)).Store(&has); err == nil && !has {
		a.gone(string(sender))
	}
	return rec.ID, nil
}

// Get returns the job's record.
func (a *dbusAPI) Get(sender dbus.Sender, id string) (map[string]dbus.Variant, *dbus.Error) {
	_, rec, derr := a.visible(sender, id)
	if derr != nil {
		return nil, derr
	}
	return recordVariant(rec), nil
}

// Wait returns the job's record once it has ended, or an error when the
// daemon's bus connection closes first.
func (a *dbusAPI) Wait(sender dbus.Sender, id string) (map[string]dbus.Variant, *dbus.Error) {
	if _, _, derr := a.visible(sender, id); derr != nil {
		return nil, derr
	}
	rec, err := a.c.Wait(a.conn.Context(), id)
	if err != nil {
		return nil, dbusError(err)
	}
	return recordVariant(rec), nil
}

// List returns the jobs the sender may see, newest first, read a page at
// a time (Core.ListPage), so that only their summaries are held.
func (a *dbusAPI) List(sender dbus.Sender) ([]jobSummary, *dbus.Error) {
	c, derr := a.caller(sender)
	if derr != nil {
		return nil, derr
	}
	jobs := []jobSummary{}
	for after := ""; ; {
		recs, next, err := a.c.ListPage(a.conn.Context(), c, after, api.MaxPage)
		if err != nil {
			return nil, dbusError(err)
		}
		for _, r := range recs {
			jobs = append(jobs, jobSummary{r.ID, r.Op, string(r.State), r.Message})
		}
		if after = next; after == "" {
			return jobs, nil
		}
	}
}

// Cancel cancels the job and returns its record once it has ended.
func (a *dbusAPI) Cancel(sender dbus.Sender, id string) (map[string]dbus.Variant, *dbus.Error) {
	if _, _, derr := a.visible(sender, id); derr != nil {
		return nil, derr
	}
	ctx, cancel := context.WithTimeout(a.conn.Context(), dbusCancelWait)
	defer cancel()
	rec, err := a.c.Cancel(ctx, id)
	if err != nil {
		return nil, dbusError(err)
	}
	return recordVariant(rec), nil
}

// Subscribe has the job's Finished signal sent to the sender: now, when
// the job has ended, else when it ends.
func (a *dbusAPI) Subscribe(sender dbus.Sender, id string) *dbus.Error {
	c, _, derr := a.visible(sender, id)
	if derr != nil {
		return derr
	}
	if err := a.subscribe(string(sender), c.UID, id, true); err != nil {
		return dbusError(err)
	}
	return nil
}

// subscribe adds name, of caller uid, to the job's subscribers, once
// however often it subscribes; bounded, it refuses a subscription beyond
// the uid's max_subscriptions_per_uid (those of its calls are not). Then,
// if the job has ended, it sends Finished to the subscribers itself:
// whichever of this and the daemon's finish hook takes the subscribers
// sends, so each gets the signal once.
func (a *dbusAPI) subscribe(name string, uid uint32, id string, bounded bool) error {
	a.mu.Lock()
	switch _, dup := a.subs[id][name]; {
	case dup:
	case bounded && a.subsOf[uid] >= a.maxSubs:
		n := a.subsOf[uid]
		a.mu.Unlock()
		return errorf(api.CodeBusy, fmt.Sprintf("uid %d awaits %d jobs by Call and Subscribe, the limit max_subscriptions_per_uid", uid, n))
	default:
		if a.subs[id] == nil {
			a.subs[id] = make(map[string]uint32)
		}
		a.subs[id][name] = uid
		a.subsOf[uid]++
	}
	a.mu.Unlock()
	if a.c.Done(id) != nil {
		return nil
	}
	if rec, err := a.c.Get(id); err == nil {
		a.finished(rec)
	}
	return nil
}

// unsubscribe removes the job's subscribers and returns their names;
// a.mu is held.
func (a *dbusAPI) unsubscribe(id string) []string {
	var names []string
	for name, uid := range a.subs[id] {
		names = append(names, name)
		a.release(uid)
	}
	delete(a.subs, id)
	return names
}

// release uncounts a subscription of uid; a.mu is held.
func (a *dbusAPI) release(uid uint32) {
	if a.subsOf[uid]--; a.subsOf[uid] <= 0 {
		delete(a.subsOf, uid)
	}
}

// watchGone hears of each connection that leaves the bus (a
// NameOwnerChanged signal with no new owner) until the connection closes.
func (a *dbusAPI) watchGone(signals <-chan *dbus.Signal) {
	for s := range signals {
		if s.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(s.Body) != 3 {
			continue
		}
		name, _ := s.Body[0].(string)
		owner, _ := s.Body[2].(string)
		if owner == "" && strings.HasPrefix(name, ":") {
			a.gone(name)
		}
	}
}

// gone ends the subscriptions of the connection with unique name name,
// which has left the bus, and releases its hold on each job it called:
// one whose op has on_disconnect "stop" is canceled once no caller holds
// it.
func (a *dbusAPI) gone(name string) {
	a.mu.Lock()
	var released []func(bool)
	for id, callers := range a.calledBy {
		if release, ok := callers[name]; ok {
			released = append(released, release)
			delete(callers, name)
			if len(callers) == 0 {
				delete(a.calledBy, id)
			}
		}
	}
	for id, names := range a.subs {
		if uid, ok := names[name]; ok {
			delete(names, name)
			a.release(uid)
			if len(names) == 0 {
				delete(a.subs, id)
			}
		}
	}
	a.mu.Unlock()
	for _, release := range released {
		go release(true)
	}
}

// finished sends the job's Finished signal to its subscribers.
func (a *dbusAPI) finished(r *api.Record) {
	a.mu.Lock()
	names := a.unsubscribe(r.ID)
	callers := a.calledBy[r.ID]
	delete(a.calledBy, r.ID)
	a.mu.Unlock()
	for _, release := range callers {
		release(false)
	}
	status := int32(-1)
	if r.ExitCode != nil {
		status = int32(*r.ExitCode)
	}
	body := []any{r.ID, r.State == api.StateSucceeded, status, r.Message}
	for _, name := range names {
		msg := &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
			dbus.FieldPath:        dbus.MakeVariant(DBusPath),
			dbus.FieldInterface:   dbus.MakeVariant(DBusIface),
			dbus.FieldMember:      dbus.MakeVariant("Finished"),
			dbus.FieldDestination: dbus.MakeVariant(name),
			dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(body...)),
		}, Body: body}
		a.conn.Send(msg, nil) // a subscriber that has left is no error
	}
}

// caller returns the sender's credentials as the bus daemon reports them.
func (a *dbusAPI) caller(sender dbus.Sender) (core.Caller, *dbus.Error) {
	var creds map[string]dbus.Variant
	err := a.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionCredentials", 0, string(sender)).Store(&creds)
	if err != nil {
		return core.Caller{}, dbusError(errorf(api.CodeUnauthorized, fmt.Sprintf("credentials of %s: %v", sender, err)))
	}
	uid, ok := creds["UnixUserID"].Value().(uint32)
	if !ok {
		return core.Caller{}, dbusError(errorf(api.CodeUnauthorized, fmt.Sprintf("credentials of %s: the bus reports no uid", sender)))
	}
	c := core.Caller{UID: uid}
	c.GIDs, _ = creds["UnixGroupIDs"].Value().([]uint32)
	if pid, ok := creds["ProcessID"].Value().(uint32); ok {
		c.PID = int32(pid)
	}
	return c, nil
}

// visible returns the sender's credentials and the job's record if the
// sender may see it: not_found for a job it may not see, as for one that
// does not exist.
func (a *dbusAPI) visible(sender dbus.Sender, id string) (core.Caller, *api.Record, *dbus.Error) {
	c, derr := a.caller(sender)
	if derr != nil {
		return c, nil, derr
	}
	rec, err := a.c.Get(id)
	if err == nil && !a.c.MaySee(c, rec) {
		err = errorf(api.CodeNotFound, fmt.Sprintf("job %q: no such job", id))
	}
	if err != nil {
		return c, nil, dbusError(err)
	}
	return c, rec, nil
}

// dbusError returns err as the D-Bus error org.unitrun.Ops1.Error.<code>;
// an error that is not an *api.Error is an internal one.
func dbusError(err error) *dbus.Error {
	e := asError(err)
	return dbus.NewError(DBusIface+".Error."+e.Code, []any{e.Message})
}

// recordVariant returns the record as a{sv}, with the keys of its JSON
// form; optional fields that are unset are left out, as exit_code when
// no process ran. Times are RFC 3339 strings.
func recordVariant(r *api.Record) map[string]dbus.Variant {
	v := map[string]dbus.Variant{
		"id": dbus.MakeVariant(r.ID), "op": dbus.MakeVariant(r.Op), "args": dbus.MakeVariant(append([]string{}, r.Args...)),
		"state": dbus.MakeVariant(string(r.State)), "unit": dbus.MakeVariant(r.Unit),
		"reboot_required": dbus.MakeVariant(r.RebootRequired), "caller_uid": dbus.MakeVariant(r.CallerUID),
		"caller_pid": dbus.MakeVariant(r.CallerPID), "created_at": dbus.MakeVariant(r.CreatedAt.Format(time.RFC3339Nano)),
	}
	for k, s := range map[string]string{"invocation_id": r.InvocationID, "job_result": r.JobResult, "result": r.Result,
		"signal": r.Signal, "message": r.Message, "output_tail": r.OutputTail} {
		if s != "" {
			v[k] = dbus.MakeVariant(s)
		}
	}
	if r.ExitCode != nil {
		v["exit_code"] = dbus.MakeVariant(int32(*r.ExitCode))
	}
	if r.StartedAt != nil {
		v["started_at"] = dbus.MakeVariant(r.StartedAt.Format(time.RFC3339Nano))
	}
	if r.FinishedAt != nil {
		v["finished_at"] = dbus.MakeVariant(r.FinishedAt.Format(time.RFC3339Nano))
	}
	if r.Attempts > 0 {
		v["attempts"] = dbus.MakeVariant(int32(r.Attempts))
	}
	return v
}
