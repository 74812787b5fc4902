package temporal

import (
	"crypto/rand"
	"time"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewTaskID returns a new task id in the store's form (a ULID: 48 bits of
// milliseconds, 80 random bits, Crockford base32), so tasks started on
// Temporal sort among local ones by creation time.
func NewTaskID(now time.Time) string {
	var raw [16]byte
	ms := uint64(max(now.UnixMilli(), 0))
	for i := 5; i >= 0; i-- {
		raw[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(raw[6:])
	// 128 bits as 26 base32 digits, the first holding the top 3 bits.
	var out [26]byte
	var acc uint64
	bits := 0
	i := 25
	for k := 15; k >= 0; k-- {
		acc |= uint64(raw[k]) << bits
		bits += 8
		for bits >= 5 && i >= 0 {
			out[i] = crockford[acc&31]
			acc >>= 5
			bits -= 5
			i--
		}
	}
	if i == 0 {
		out[0] = crockford[acc&31]
	}
	return string(out[:])
}
