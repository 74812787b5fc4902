package routines

import (
	"errors"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestCache(t *testing.T) {
	var c Cache[string]
	calls := 0
	parse := func(h string) (string, error) { calls++; return "parsed " + h[:8], nil }
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Load([]byte("a"), parse) }()
	}
	wg.Wait()
	r, err := c.Load([]byte("a"), parse)
	if err != nil || r != "parsed ca978112" {
		t.Fatalf("Load = %q, %v", r, err)
	}
	if calls > 8 || calls < 1 {
		t.Fatalf("parse called %d times", calls)
	}
	n := calls
	c.Load([]byte("a"), parse)
	if calls != n {
		t.Fatal("a loaded routine was parsed again")
	}
	if got, err := c.Get("x", "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"); err != nil || got != r {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if _, err := c.Get("dag", "nope"); !errors.Is(err, sdk.ErrBadRequest) || err.Error() != `dag: routine "nope" is not loaded` {
		t.Fatalf("Get unknown: %v", err)
	}
	if _, err := c.Load([]byte("b"), func(string) (string, error) { return "", errors.New("bad") }); err == nil {
		t.Fatal("parse error lost")
	}
	if _, err := c.Get("x", "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"); err == nil {
		t.Fatal("a failed parse was cached")
	}
}

// TestGetLast: Get remembers the routine it found last; asking for
// another routine, then the first again, or for one never loaded, must
// not answer with the remembered one.
func TestGetLast(t *testing.T) {
	var c Cache[string]
	var hashes [2]string
	for i, src := range []string{"one", "two"} {
		if _, err := c.Load([]byte(src), func(h string) (string, error) { hashes[i] = h; return src, nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []int{0, 0, 1, 1, 0, 1} {
		if got, err := c.Get("x", hashes[k]); err != nil || got != []string{"one", "two"}[k] {
			t.Fatalf("Get(%d) = %q, %v", k, got, err)
		}
	}
	if _, err := c.Get("x", "ffff"+hashes[0][4:]); err == nil {
		t.Fatal("an unknown hash was answered")
	}
	if got, _ := c.Get("x", hashes[1]); got != "two" {
		t.Fatalf("after a miss: %q", got)
	}
}
