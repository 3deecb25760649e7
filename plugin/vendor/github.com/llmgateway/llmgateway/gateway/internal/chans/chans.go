// Package chans holds the core's channel operations that choose among
// several channels, written without the select statement.
//
// Yaegi v0.16.1 compiles each select statement into one
// []reflect.SelectCase that every execution of the statement fills in
// and hands to reflect.Select: two goroutines running the same select at
// once may send each other's values or wait on each other's channels (a
// connection put back into a pool twice, a request holding another
// provider's slot, a timer that never fires for its own waiter). Here
// every call builds its own cases and reflect.Select — compiled code
// under the interpreter too — does the rest. The core's other packages
// contain no select statement (gateway/yaegi_rules_test.go fails on one).
package chans

import "reflect"

var unit = reflect.ValueOf(struct{}{})

// TrySendUnit sends struct{}{} on ch (a chan struct{}) unless it would
// block; it reports whether it sent.
func TrySendUnit(ch chan struct{}) bool {
	return reflect.ValueOf(ch).TrySend(unit)
}

// TrySend sends v on ch (a channel of v's type) unless it would block.
func TrySend(ch, v interface{}) bool {
	return reflect.ValueOf(ch).TrySend(reflect.ValueOf(v))
}

// TryRecv receives from ch unless it would block: the value (nil when
// none) and whether one was received (a closed channel yields its zero
// value and true).
func TryRecv(ch interface{}) (interface{}, bool) {
	// reflect's ok is false for a closed channel's zero value too; an
	// invalid Value is the would-block case.
	v, _ := reflect.ValueOf(ch).TryRecv()
	if !v.IsValid() {
		return nil, false
	}
	return v.Interface(), true
}

// TryRecvUnit is TryRecv for a chan struct{}: whether a token was
// taken, or the channel is closed.
func TryRecvUnit(ch chan struct{}) bool {
	v, _ := reflect.ValueOf(ch).TryRecv()
	return v.IsValid()
}

// Closed reports whether ch (a channel that is only ever closed, never
// sent on) is closed.
func Closed(ch <-chan struct{}) bool {
	v, _ := reflect.ValueOf(ch).TryRecv()
	return v.IsValid()
}

// Case is one channel operation of Wait: a receive from Recv, or (Recv
// nil) a send of Send on Chan.
type Case struct {
	Recv interface{}
	Chan interface{}
	Send interface{}
}

// Recv is the case that receives from ch.
func Recv(ch interface{}) Case { return Case{Recv: ch} }

// Send is the case that sends v on ch.
func Send(ch, v interface{}) Case { return Case{Chan: ch, Send: v} }

// Wait blocks until one of the cases can proceed, runs it, and returns
// its index and, for a receive, the value received (nil for a send) and
// whether it came from a send (false: the channel is closed). A nil
// channel's case never proceeds, as in a select statement.
func Wait(cases ...Case) (int, interface{}, bool) {
	sc := make([]reflect.SelectCase, len(cases))
	for i := 0; i < len(cases); i++ {
		c := cases[i]
		if c.Recv != nil {
			sc[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.Recv)}
			continue
		}
		sc[i] = reflect.SelectCase{Dir: reflect.SelectSend, Chan: reflect.ValueOf(c.Chan), Send: reflect.ValueOf(c.Send)}
	}
	i, v, ok := reflect.Select(sc)
	if sc[i].Dir != reflect.SelectRecv || !v.IsValid() {
		return i, nil, ok
	}
	return i, v.Interface(), ok
}
