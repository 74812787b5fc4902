package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progressInterval is the least time between two redraws: often enough to
// look alive, rarely enough that thousands of fast replays do not flood the
// terminal.
const progressInterval = 100 * time.Millisecond

const progressWidth = 30 // cells in the bar

// Progress is a one-line progress bar for long replays and evolutions,
// redrawn in place with a carriage return. It is safe for concurrent use by
// replay workers.
//
// # Notes
//
// A disabled Progress never writes. The caller enables it only when w is a
// terminal (and not under NO_COLOR); in CI logs a bar redrawn in place is
// noise. Redraws are rate-limited to one per progressInterval, except the
// last one.
type Progress struct {
	w       io.Writer
	total   int
	enabled bool
	now     func() time.Time

	mu       sync.Mutex
	n        int
	start    time.Time
	last     time.Time
	drawn    bool
	lastLen  int
	finished bool
}

// NewProgress returns a progress bar counting up to total on w (total 0
// means unknown: only the count and rate are shown). When enabled is false
// the bar never writes.
func NewProgress(w io.Writer, total int, enabled bool) *Progress {
	return newProgress(w, total, enabled, time.Now)
}

func newProgress(w io.Writer, total int, enabled bool, now func() time.Time) *Progress {
	return &Progress{w: w, total: max(total, 0), enabled: enabled, now: now, start: now()}
}

// SetTotal sets the count the bar goes up to, once the caller knows it
// (a replay knows its tasks only after sampling them). Before anything is
// counted it also restarts the clock, so that the rate and the ETA measure
// the work, not what preceded it.
func (p *Progress) SetTotal(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = max(total, 0)
	if p.n == 0 {
		p.start = p.now()
	}
}

// Add counts n more finished items and redraws if enough time has passed
// since the last redraw or the total is reached. Add after Done does
// nothing.
func (p *Progress) Add(n int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.n += n
	now := p.now()
	if p.drawn && now.Sub(p.last) < progressInterval && (p.total == 0 || p.n < p.total) {
		return
	}
	p.draw(now)
}

// Done draws the final state and ends the line. Calling it again does
// nothing.
func (p *Progress) Done() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	p.draw(p.now())
	io.WriteString(p.w, "\n")
}

// draw writes the bar; the caller holds p.mu. Write errors are ignored: a
// broken progress display must not fail a replay.
func (p *Progress) draw(now time.Time) {
	p.last, p.drawn = now, true
	line := p.line(now)
	pad := ""
	if n := len(line); n < p.lastLen {
		pad = strings.Repeat(" ", p.lastLen-n) // erase the tail of a longer previous line
	}
	p.lastLen = len(line)
	io.WriteString(p.w, "\r"+line+pad)
}

// line is the bar's text, e.g.
// "[#########.....................]  37/120  31%  12.3/s  eta 7s".
func (p *Progress) line(now time.Time) string {
	elapsed := now.Sub(p.start)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(p.n) / elapsed.Seconds()
	}
	if p.total == 0 {
		return fmt.Sprintf("%d done  %.1f/s", p.n, rate)
	}
	n := min(max(p.n, 0), p.total)
	fill := progressWidth * n / p.total
	s := fmt.Sprintf("[%s%s]  %d/%d  %3d%%  %.1f/s", strings.Repeat("#", fill), strings.Repeat(".", progressWidth-fill),
		n, p.total, 100*n/p.total, rate)
	if n < p.total && rate > 0 {
		eta := time.Duration(float64(p.total-n) / rate * float64(time.Second))
		s += "  eta " + eta.Round(time.Second).String()
	}
	return s
}
