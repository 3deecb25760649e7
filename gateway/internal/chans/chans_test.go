package chans

import (
	"sync"
	"testing"
	"time"
)

func TestTryOps(t *testing.T) {
	sem := make(chan struct{}, 1)
	if !TrySendUnit(sem) || TrySendUnit(sem) {
		t.Fatal("TrySendUnit: want one send into a 1-slot channel")
	}
	if !TryRecvUnit(sem) || TryRecvUnit(sem) {
		t.Fatal("TryRecvUnit: want one token back")
	}
	ptrs := make(chan *int, 1)
	x := 7
	if !TrySend(ptrs, &x) || TrySend(ptrs, &x) {
		t.Fatal("TrySend")
	}
	v, ok := TryRecv(ptrs)
	if !ok || v.(*int) != &x {
		t.Fatalf("TryRecv: %v %v", v, ok)
	}
	if _, ok := TryRecv(ptrs); ok {
		t.Fatal("TryRecv on an empty channel")
	}
	done := make(chan struct{})
	if Closed(done) {
		t.Fatal("open channel reported closed")
	}
	close(done)
	if !Closed(done) {
		t.Fatal("closed channel reported open")
	}
}

func TestWait(t *testing.T) {
	var never chan struct{} // a nil channel's case never proceeds
	tm := time.NewTimer(time.Millisecond)
	defer tm.Stop()
	if i, _, _ := Wait(Recv(never), Recv(tm.C)); i != 1 {
		t.Fatalf("Wait picked %d", i)
	}
	full := make(chan struct{}, 1)
	full <- struct{}{}
	vals := make(chan string, 1)
	vals <- "v"
	i, v, ok := Wait(Send(full, struct{}{}), Recv(vals))
	if i != 1 || v.(string) != "v" || !ok {
		t.Fatalf("Wait: %d %v %v", i, v, ok)
	}
	room := make(chan int, 1)
	if i, v, _ := Wait(Send(room, 5)); i != 0 || v != nil || <-room != 5 {
		t.Fatal("Wait send")
	}
}

// Many goroutines, each with its own 1-slot semaphore, never see
// another's: the property a select statement loses under Yaegi.
func TestConcurrentOwnChannels(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, 1)
			ptrs := make(chan *int, 1)
			mine := new(int)
			for i := 0; i < 2000; i++ {
				if !TrySendUnit(sem) {
					errs <- "own empty semaphore full"
					return
				}
				if !TrySend(ptrs, mine) {
					errs <- "own pool full"
					return
				}
				_, v, _ := Wait(Recv(ptrs))
				if v.(*int) != mine {
					errs <- "received another goroutine's value"
					return
				}
				if !TryRecvUnit(sem) {
					errs <- "own token gone"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
