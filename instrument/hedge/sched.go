package hedge

import (
	"sync"
	"time"

	"github.com/stormwatch-go/stormwatch/instrument/clock"
)

// scheduler starts the hedges of one Hedge's calls. The calls waiting for their next hedge are
// in a queue in the order they are due (every call of a hedge waits the same delay, so the order
// they joined in), and one timer serves the whole queue: it is armed for the head when a call
// joins an idle queue, and when it fires it takes every call that is due and re-arms itself for
// the new head, if any. A call that ends before its delay only leaves the queue: it neither arms
// nor stops a timer, so the timer fires about once per delay however many calls there are, and
// once more after the last one, finding nothing due.
//
// A call whose delay shrank (an adaptive delay) may wait behind an older call due later, at most
// the difference of the two delays, once.
type scheduler struct {
	h *Hedge

	mu         sync.Mutex
	head, tail *entry
	armed      bool        // the timer will fire and look at the queue
	rt         *time.Timer // the wall clock's timer, reset each time
	free       *entry      // the races of calls that started no hedge, for reuse (through next)
	nfree      int
}

// maxFree bounds the races a scheduler keeps for reuse: more than that many calls at once
// allocate their race.
const maxFree = 256

// entry is a call in the scheduler's queue. Its fields are guarded by the scheduler's mu.
type entry struct {
	prev, next *entry
	due        time.Duration // on the hedge's clock ([Hedge.mono])
	queued     bool
	taken      bool // the scheduler took it once: a hedge may have started
	r          interface{ launch() }
}

// add queues e, due delay after now.
func (s *scheduler) add(e *entry, now, delay time.Duration) {
	s.mu.Lock()
	s.link(e, now, delay)
	s.mu.Unlock()
}

// link queues e, due delay after now, and arms the timer if it is not. Called with mu held.
func (s *scheduler) link(e *entry, now, delay time.Duration) {
	e.due, e.queued = now+delay, true
	e.prev, e.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = e
	} else {
		s.head = e
	}
	s.tail = e
	if !s.armed {
		s.armed = true
		s.arm(delay)
	}
}

// remove takes e out of the queue, if it is there.
func (s *scheduler) remove(e *entry) {
	s.mu.Lock()
	if e.queued {
		s.unlink(e)
	}
	s.mu.Unlock()
}

// unlink takes e out of the queue. Called with mu held.
func (s *scheduler) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		s.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next, e.queued = nil, nil, false
}

// arm makes the timer fire after d. Called with mu held, when the timer is not armed.
func (s *scheduler) arm(d time.Duration) {
	if !s.h.realClock {
		clock.AfterFunc(s.h.clk, d, s.fire)
		return
	}
	if s.rt == nil {
		s.rt = time.AfterFunc(d, s.fire)
		return
	}
	s.rt.Reset(d)
}

// fire takes the calls that are due, re-arms the timer for the next one and launches their
// hedges: the last on the timer's goroutine, the others on goroutines of their own.
func (s *scheduler) fire() {
	now := s.h.mono()
	var buf [8]*entry
	due := buf[:0]
	s.mu.Lock()
	s.armed = false
	for e := s.head; e != nil && e.due <= now; e = s.head {
		s.unlink(e)
		e.taken = true
		due = append(due, e)
	}
	if s.head != nil {
		s.armed = true
		s.arm(s.head.due - now)
	}
	s.mu.Unlock()
	for i, e := range due {
		if i == len(due)-1 {
			e.r.launch()
		} else {
			go e.r.launch()
		}
	}
}
