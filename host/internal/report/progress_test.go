package report

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestProgressDisabledNeverWrites(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, 10, false)
	for range 20 {
		p.Add(1)
	}
	p.Done()
	p.Done()
	if b.Len() != 0 {
		t.Fatalf("wrote %q", b.String())
	}
}

func TestProgressDraws(t *testing.T) {
	var b bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := newProgress(&b, 120, true, clk.now)

	clk.advance(2 * time.Second)
	p.Add(30)
	want := "\r[#######.......................]  30/120   25%  15.0/s  eta 6s"
	if b.String() != want {
		t.Fatalf("first draw:\n got %q\nwant %q", b.String(), want)
	}

	// Within the interval: no redraw.
	b.Reset()
	clk.advance(progressInterval / 2)
	p.Add(1)
	if b.Len() != 0 {
		t.Fatalf("redrew within %v: %q", progressInterval, b.String())
	}

	// After the interval: redraw with the count so far.
	clk.advance(progressInterval)
	p.Add(1)
	if !strings.Contains(b.String(), "  32/120 ") {
		t.Fatalf("got %q", b.String())
	}

	// Reaching the total draws at once, even within the interval.
	b.Reset()
	p.Add(88)
	if !strings.HasPrefix(b.String(), "\r[##############################]  120/120  100%") || strings.Contains(b.String(), "eta") {
		t.Fatalf("final draw %q", b.String())
	}

	b.Reset()
	p.Done()
	if !strings.HasSuffix(b.String(), "\n") {
		t.Fatalf("Done did not end the line: %q", b.String())
	}
	b.Reset()
	p.Done()
	p.Add(5)
	if b.Len() != 0 {
		t.Fatalf("wrote after Done: %q", b.String())
	}
}

// TestProgressErasesLongerLine: a shorter line is padded to cover the
// previous one.
func TestProgressErasesLongerLine(t *testing.T) {
	var b bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := newProgress(&b, 0, true, clk.now)
	clk.advance(time.Second)
	p.Add(1000) // "1000 done  1000.0/s"
	first := len(b.String()) - 1
	b.Reset()
	clk.advance(999 * time.Second)
	p.Add(1) // "1001 done  1.0/s", shorter
	got := b.String()
	if len(got)-1 != first || !strings.HasPrefix(got, "\r1001 done  1.0/s ") {
		t.Fatalf("got %q (%d cells), previous line %d cells", got, len(got)-1, first)
	}
}

func TestProgressConcurrent(t *testing.T) {
	var b lockedBuffer
	p := NewProgress(&b, 400, true)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				p.Add(1)
			}
		})
	}
	wg.Wait()
	p.Done()
	if !strings.Contains(b.String(), "400/400  100%") {
		t.Fatalf("final state missing: %q", b.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgressSetTotal: a bar started without a total shows done/total,
// the rate and the ETA once told the total, measured from then.
func TestProgressSetTotal(t *testing.T) {
	var b bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := newProgress(&b, 0, true, clk.now)
	clk.advance(5 * time.Second) // sampling and opening plugins: not replay time
	p.SetTotal(200)
	clk.advance(2 * time.Second)
	p.Add(50)
	want := "\r[#######.......................]  50/200   25%  25.0/s  eta 6s"
	if b.String() != want {
		t.Fatalf("draw:\n got %q\nwant %q", b.String(), want)
	}
	b.Reset()
	clk.advance(6 * time.Second)
	p.Add(150)
	p.Done()
	if want := "\r[##############################]  200/200  100%  25.0/s\n"; !strings.HasSuffix(b.String(), want) {
		t.Fatalf("last draw:\n got %q\nwant it to end in %q", b.String(), want)
	}
}
