package feel

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Precision is the number of significant decimal digits FEEL numbers keep:
// DMN specifies IEEE 754-2008 Decimal128, which holds 34.
const Precision = 34

// Exponent bounds of Decimal128 (value = coefficient × 10^exponent with a
// coefficient of at most 34 digits). A result beyond them is null.
const (
	maxExp = 6111
	minExp = -6176
)

// Number is a FEEL number: an exact decimal of up to 34 significant
// digits. Arithmetic is decimal, so 0.1 + 0.2 = 0.3. The zero value is 0.
//
// # Notes
//
// A Number is a value: operations return new Numbers and never change
// their operands. Small coefficients are held in an int64, so the common
// operations on ordinary amounts allocate nothing.
type Number struct {
	c int64    // coefficient when b is nil
	b *big.Int // coefficient when it does not fit an int64; never mutated
	e int32    // exponent
}

// NewNumber returns the FEEL number i.
func NewNumber(i int64) Number { return Number{c: i} }

// NumberFromFloat returns the decimal that prints as f's shortest
// representation (so 0.1 becomes exactly 0.1); false for NaN and ±Inf.
func NumberFromFloat(f float64) (Number, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Number{}, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<62 {
		return Number{c: int64(f)}, true
	}
	n, err := ParseNumber(strconv.FormatFloat(f, 'g', -1, 64))
	return n, err == nil
}

// ParseNumber parses a decimal such as "12", "-0.5", "1.23e4" or ".5".
func ParseNumber(s string) (Number, error) {
	orig := s
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	exp := int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		x, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil {
			return Number{}, fmt.Errorf("parse number %q: bad exponent", orig)
		}
		exp = x
		s = s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	if digits == "" {
		return Number{}, fmt.Errorf("parse number %q: no digits", orig)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return Number{}, fmt.Errorf("parse number %q: invalid digit %q", orig, digits[i])
		}
	}
	exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return Number{}, nil
	}
	var n Number
	if len(digits) <= 18 {
		c, _ := strconv.ParseInt(digits, 10, 64)
		if neg {
			c = -c
		}
		n = Number{c: c}
	} else {
		b, _ := new(big.Int).SetString(digits, 10)
		if neg {
			b.Neg(b)
		}
		n = Number{b: b}
	}
	if exp > math.MaxInt32/2 || exp < math.MinInt32/2 {
		return Number{}, fmt.Errorf("parse number %q: exponent out of range", orig)
	}
	r, ok := finish(n.bigCoef(), exp)
	if !ok {
		return Number{}, fmt.Errorf("parse number %q: out of range", orig)
	}
	return r, nil
}

func (n Number) bigCoef() *big.Int {
	if n.b != nil {
		return n.b
	}
	return big.NewInt(n.c)
}

// Sign returns -1, 0 or +1.
func (n Number) Sign() int {
	if n.b != nil {
		return n.b.Sign()
	}
	switch {
	case n.c < 0:
		return -1
	case n.c > 0:
		return 1
	}
	return 0
}

var pow10i = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < 19; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

var pow10cache [80]*big.Int

func init() {
	p := big.NewInt(1)
	for i := range pow10cache {
		pow10cache[i] = new(big.Int).Set(p)
		p.Mul(p, big.NewInt(10))
	}
}

func pow10big(k int64) *big.Int {
	if k < int64(len(pow10cache)) {
		return pow10cache[k]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(k), nil)
}

// numDigits returns the number of decimal digits of |c| (1 for zero).
func numDigits(c *big.Int) int64 {
	if c.Sign() == 0 {
		return 1
	}
	a := new(big.Int).Abs(c)
	d := int64(float64(a.BitLen()-1)*0.30102999566398) + 1
	if a.Cmp(pow10big(d-1)) < 0 {
		d--
	} else if a.Cmp(pow10big(d)) >= 0 {
		d++
	}
	return d
}

// finish rounds c×10^e to Precision digits (half even), checks the
// exponent range and returns the compact form.
func finish(c *big.Int, e int64) (Number, bool) {
	if c.Sign() == 0 {
		return Number{}, true
	}
	d := numDigits(c)
	if d > Precision {
		drop := d - Precision
		c = roundBig(c, drop, halfEven)
		e += drop
		if numDigits(c) > Precision { // rounding carried into a new digit
			c = new(big.Int).Quo(c, pow10cache[1])
			e++
		}
	}
	if e < minExp {
		drop := minExp - e
		if drop > Precision+1 {
			return Number{}, true
		}
		c = roundBig(c, drop, halfEven)
		e = minExp
		if c.Sign() == 0 {
			return Number{}, true
		}
	}
	if e > maxExp {
		// 1E+6112 may still be written with a longer coefficient.
		if e-maxExp+numDigits(c) > Precision {
			return Number{}, false
		}
		c = new(big.Int).Mul(c, pow10big(e-maxExp))
		e = maxExp
	}
	if c.IsInt64() {
		return Number{c: c.Int64(), e: int32(e)}, true
	}
	return Number{b: c, e: int32(e)}, true
}

type roundMode int

const (
	halfEven roundMode = iota
	halfUp             // ties away from zero
	halfDown           // ties toward zero
	up                 // away from zero
	down               // toward zero
	floorMode
	ceilingMode
)

// roundBig drops the last drop digits of c, rounding by mode.
func roundBig(c *big.Int, drop int64, mode roundMode) *big.Int {
	if drop <= 0 {
		return c
	}
	neg := c.Sign() < 0
	a := new(big.Int).Abs(c)
	var q, r *big.Int
	if drop > numDigits(a)+1 {
		q, r = new(big.Int), a // r < half of 10^drop
	} else {
		q, r = new(big.Int).QuoRem(a, pow10big(drop), new(big.Int))
	}
	if r.Sign() != 0 {
		var half int // -1 below half, 0 at half, 1 above
		if drop > numDigits(a)+1 {
			half = -1
		} else {
			half = new(big.Int).Lsh(r, 1).Cmp(pow10big(drop))
		}
		inc := false
		switch mode {
		case halfEven:
			inc = half > 0 || half == 0 && q.Bit(0) == 1
		case halfUp:
			inc = half >= 0
		case halfDown:
			inc = half > 0
		case up:
			inc = true
		case down:
		case floorMode:
			inc = neg
		case ceilingMode:
			inc = !neg
		}
		if inc {
			q.Add(q, big.NewInt(1))
		}
	}
	if neg {
		q.Neg(q)
	}
	return q
}

// align returns the coefficients of a and b scaled to the smaller exponent.
func align(a, b Number) (*big.Int, *big.Int, int64) {
	ac, bc := a.bigCoef(), b.bigCoef()
	switch {
	case a.e > b.e:
		ac = new(big.Int).Mul(ac, pow10big(int64(a.e)-int64(b.e)))
		return ac, bc, int64(b.e)
	case b.e > a.e:
		bc = new(big.Int).Mul(bc, pow10big(int64(b.e)-int64(a.e)))
	}
	return ac, bc, int64(a.e)
}

// adjExp is the exponent of the most significant digit.
func (n Number) adjExp() int64 {
	if n.b == nil {
		a := n.c
		if a < 0 {
			a = -a
		}
		d := int64(1)
		for d < 19 && a >= pow10i[d] {
			d++
		}
		return int64(n.e) + d - 1
	}
	return int64(n.e) + numDigits(n.b) - 1
}

// scaleSmall multiplies c by 10^k when the result fits an int64.
func scaleSmall(c int64, k int32) (int64, bool) {
	if k < 0 || k > 18 {
		return 0, false
	}
	neg := c < 0
	a := uint64(c)
	if neg {
		a = uint64(-c)
	}
	hi, lo := bits.Mul64(a, uint64(pow10i[k]))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(lo), true
	}
	return int64(lo), true
}

// Add returns n+m; false when the result is out of range.
func (n Number) Add(m Number) (Number, bool) {
	if n.b == nil && m.b == nil {
		x, y, e := n.c, m.c, n.e
		ok := true
		switch {
		case n.e > m.e:
			x, ok = scaleSmall(n.c, n.e-m.e)
			e = m.e
		case m.e > n.e:
			y, ok = scaleSmall(m.c, m.e-n.e)
		}
		if ok {
			s := x + y
			if (x^s)&(y^s) >= 0 && s != math.MinInt64 {
				return Number{c: s, e: e}, true
			}
		}
	}
	if n.Sign() == 0 {
		return m, true
	}
	if m.Sign() == 0 {
		return n, true
	}
	// A summand far below the other's last kept digit cannot change it
	// except through rounding; cap the alignment so 1e6000 + 1e-6000 stays
	// cheap.
	an, am := n.adjExp(), m.adjExp()
	if an-am > Precision+2 {
		m = tiny(m.Sign(), an-Precision-3)
	} else if am-an > Precision+2 {
		n = tiny(n.Sign(), am-Precision-3)
	}
	x, y, e := align(n, m)
	return finish(new(big.Int).Add(x, y), e)
}

// tiny is a sticky stand-in for a negligible summand.
func tiny(sign int, e int64) Number {
	return Number{c: int64(sign), e: int32(e)}
}

// Sub returns n-m.
func (n Number) Sub(m Number) (Number, bool) { return n.Add(m.Neg()) }

// Neg returns -n.
func (n Number) Neg() Number {
	if n.b == nil {
		if n.c == math.MinInt64 {
			return Number{b: new(big.Int).Neg(big.NewInt(n.c)), e: n.e}
		}
		return Number{c: -n.c, e: n.e}
	}
	r, _ := finish(new(big.Int).Neg(n.b), int64(n.e))
	return r
}

// Abs returns |n|.
func (n Number) Abs() Number {
	if n.Sign() < 0 {
		return n.Neg()
	}
	return n
}

// Mul returns n×m.
func (n Number) Mul(m Number) (Number, bool) {
	e := int64(n.e) + int64(m.e)
	if n.b == nil && m.b == nil && e >= minExp && e <= maxExp {
		a, b := n.c, m.c
		neg := (a < 0) != (b < 0)
		ua, ub := uint64(a), uint64(b)
		if a < 0 {
			ua = uint64(-a)
		}
		if b < 0 {
			ub = uint64(-b)
		}
		hi, lo := bits.Mul64(ua, ub)
		if hi == 0 && lo <= math.MaxInt64 {
			c := int64(lo)
			if neg {
				c = -c
			}
			return Number{c: c, e: int32(e)}, true
		}
	}
	return finish(new(big.Int).Mul(n.bigCoef(), m.bigCoef()), e)
}

// Quo returns n÷m rounded to 34 digits; false for division by zero.
func (n Number) Quo(m Number) (Number, bool) {
	if m.Sign() == 0 {
		return Number{}, false
	}
	if n.Sign() == 0 {
		return Number{}, true
	}
	if n.b == nil && m.b == nil && m.c != -1 && n.c%m.c == 0 {
		e := int64(n.e) - int64(m.e)
		if e >= minExp && e <= maxExp {
			return Number{c: n.c / m.c, e: int32(e)}, true
		}
	}
	a, b := n.bigCoef(), m.bigCoef()
	shift := Precision + 2 + numDigits(b) - numDigits(a)
	if shift < 0 {
		shift = 0
	}
	num := new(big.Int).Mul(a, pow10big(shift))
	q, r := new(big.Int).QuoRem(num, b, new(big.Int))
	e := int64(n.e) - int64(m.e) - shift
	if r.Sign() != 0 {
		// A sticky digit keeps a remainder from looking like an exact tie.
		q.Mul(q, pow10cache[1])
		if (r.Sign() < 0) != (b.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
		e--
		return finish(q, e)
	}
	q, e = stripZeros(q, e)
	return finish(q, e)
}

// stripZeros removes trailing zeros of c while the exponent is below 0.
func stripZeros(c *big.Int, e int64) (*big.Int, int64) {
	if c.Sign() == 0 {
		return c, 0
	}
	ten := pow10cache[1]
	r := new(big.Int)
	q := new(big.Int)
	for e < 0 {
		q.QuoRem(c, ten, r)
		if r.Sign() != 0 {
			break
		}
		c = new(big.Int).Set(q)
		e++
	}
	return c, e
}

// Cmp compares n and m: -1, 0 or +1.
func (n Number) Cmp(m Number) int {
	if n.b == nil && m.b == nil {
		if n.e == m.e {
			return cmpInt(n.c, m.c)
		}
		if n.e > m.e {
			if x, ok := scaleSmall(n.c, n.e-m.e); ok {
				return cmpInt(x, m.c)
			}
		} else if y, ok := scaleSmall(m.c, m.e-n.e); ok {
			return cmpInt(n.c, y)
		}
	}
	sn, sm := n.Sign(), m.Sign()
	if sn != sm {
		return cmpInt(int64(sn), int64(sm))
	}
	if sn == 0 {
		return 0
	}
	an, am := n.adjExp(), m.adjExp()
	if an != am {
		if an > am {
			return sn
		}
		return -sn
	}
	x, y, _ := align(n, m)
	return x.Cmp(y)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// IsInt reports whether n has no fractional part.
func (n Number) IsInt() bool {
	if n.e >= 0 || n.Sign() == 0 {
		return true
	}
	if n.b == nil {
		if n.e < -18 {
			return false
		}
		return n.c%pow10i[-n.e] == 0
	}
	_, r := new(big.Int).QuoRem(n.b, pow10big(int64(-n.e)), new(big.Int))
	return r.Sign() == 0
}

// Int64 returns n as an int64 when it is an integer in range.
func (n Number) Int64() (int64, bool) {
	if n.b == nil {
		if n.e == 0 {
			return n.c, true
		}
		if n.e > 0 {
			return scaleSmall(n.c, n.e)
		}
	}
	if !n.IsInt() {
		return 0, false
	}
	t := n.truncBig()
	if !t.IsInt64() {
		return 0, false
	}
	return t.Int64(), true
}

// truncBig returns the integer part of n.
func (n Number) truncBig() *big.Int {
	c := n.bigCoef()
	if n.e >= 0 {
		if n.e > 6200 {
			return new(big.Int).Mul(c, pow10big(6200))
		}
		return new(big.Int).Mul(c, pow10big(int64(n.e)))
	}
	if int64(-n.e) > numDigits(c) {
		return new(big.Int)
	}
	return new(big.Int).Quo(c, pow10big(int64(-n.e)))
}

// Float64 returns the nearest float64.
func (n Number) Float64() float64 {
	if n.b == nil && n.c > -(1<<53) && n.c < 1<<53 {
		switch {
		case n.e == 0:
			return float64(n.c)
		case n.e > 0 && n.e <= 22:
			return float64(n.c) * pow10f[n.e]
		case n.e < 0 && n.e >= -22:
			return float64(n.c) / pow10f[-n.e]
		}
	}
	f, _ := strconv.ParseFloat(n.sci(), 64)
	return f
}

var pow10f = func() [23]float64 {
	var p [23]float64
	p[0] = 1
	for i := 1; i < 23; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// sci is the coefficient-and-exponent form, for strconv.
func (n Number) sci() string {
	if n.b == nil {
		return strconv.FormatInt(n.c, 10) + "e" + strconv.Itoa(int(n.e))
	}
	return n.b.String() + "e" + strconv.Itoa(int(n.e))
}

// String returns n in plain decimal notation without trailing fractional
// zeros, as FEEL's string() prints it: "1.5", "-0.001", "1000".
func (n Number) String() string {
	return string(n.appendString(nil))
}

func (n Number) appendString(buf []byte) []byte {
	if n.Sign() == 0 {
		return append(buf, '0')
	}
	if n.b == nil && n.e == 0 {
		return strconv.AppendInt(buf, n.c, 10)
	}
	var digits string
	neg := n.Sign() < 0
	if n.b == nil {
		a := uint64(n.c)
		if neg {
			a = uint64(-n.c)
		}
		digits = strconv.FormatUint(a, 10)
	} else {
		digits = new(big.Int).Abs(n.b).String()
	}
	e := int(n.e)
	if e < 0 {
		// Trailing fractional zeros carry no value.
		for e < 0 && len(digits) > 1 && digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
			e++
		}
	}
	if neg {
		buf = append(buf, '-')
	}
	switch {
	case e >= 0:
		buf = append(buf, digits...)
		for i := 0; i < e; i++ {
			buf = append(buf, '0')
		}
	case -e < len(digits):
		buf = append(buf, digits[:len(digits)+e]...)
		buf = append(buf, '.')
		buf = append(buf, digits[len(digits)+e:]...)
	default:
		buf = append(buf, '0', '.')
		for i := 0; i < -e-len(digits); i++ {
			buf = append(buf, '0')
		}
		buf = append(buf, digits...)
	}
	return buf
}

// MarshalJSON writes n as a JSON number, exactly.
func (n Number) MarshalJSON() ([]byte, error) { return n.appendString(nil), nil }

// Round returns n rounded to scale fractional digits by mode.
func (n Number) round(scale int64, mode roundMode) (Number, bool) {
	if int64(-n.e) <= scale || n.Sign() == 0 {
		return n, true
	}
	drop := int64(-n.e) - scale
	c := roundBig(n.bigCoef(), drop, mode)
	return finish(c, -scale)
}

// Floor returns the greatest integer ≤ n.
func (n Number) Floor() Number { r, _ := n.round(0, floorMode); return r }

// Ceil returns the least integer ≥ n.
func (n Number) Ceil() Number { r, _ := n.round(0, ceilingMode); return r }

// pow returns n^k for an integer k by repeated squaring at extra precision.
func (n Number) powInt(k int64) (Number, bool) {
	if k == 0 {
		return NewNumber(1), true
	}
	neg := k < 0
	if neg {
		k = -k
	}
	result := NewNumber(1)
	base := n
	for k > 0 {
		var ok bool
		if k&1 == 1 {
			if result, ok = result.Mul(base); !ok {
				return Number{}, false
			}
		}
		k >>= 1
		if k > 0 {
			if base, ok = base.Mul(base); !ok {
				return Number{}, false
			}
		}
	}
	if neg {
		return NewNumber(1).Quo(result)
	}
	return result, true
}

type bigInt = big.Int

var bigBillion = big.NewInt(1e9)
