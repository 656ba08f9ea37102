package kube

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/unitrun/unitrun/internal/lazyregexp"
)

// A Quantity is a Kubernetes resource quantity ("128Mi", "500m", "1.5",
// "2e3"), kept exactly.
type Quantity struct {
	text string
	v    *big.Rat // nil for zero
}

// quantityRE is a quantity's syntax: a number and its suffix. It is
// compiled on first use, so that a process that reads no quantity does
// not pay for it at start.
var quantityRE = lazyregexp.New(`^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$`)

// suffix is the factor of a Kubernetes quantity suffix.
func suffix(s string) *big.Rat {
	if strings.HasSuffix(s, "i") {
		return new(big.Rat).SetInt64(1 << (10 * (strings.IndexByte("KMGTPE", s[0]) + 1)))
	}
	exp := map[string]int{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}[s]
	r, _ := new(big.Rat).SetString(fmt.Sprintf("1e%d", exp))
	return r
}

// ParseQuantity reads a quantity as Kubernetes writes it: a decimal
// number with a binary (Ki … Ei), decimal (n, u, m, k, M … E) or exponent
// (e3) suffix.
func ParseQuantity(s string) (Quantity, error) {
	m := quantityRE.FindStringSubmatch(s)
	if m == nil {
		return Quantity{}, errors.New(`not a quantity like "128Mi", "500m" or "2"`)
	}
	v, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return Quantity{}, errors.New("not a number")
	}
	if exp, ok := strings.CutPrefix(strings.ToLower(m[2]), "e"); ok && m[2] != "E" {
		e, ok := new(big.Rat).SetString("1e" + exp)
		if !ok || len(exp) > 4 {
			return Quantity{}, errors.New("exponent out of range")
		}
		v.Mul(v, e)
	} else {
		v.Mul(v, suffix(m[2]))
	}
	return Quantity{text: s, v: v}, nil
}

// String is the quantity as it was written.
func (q Quantity) String() string { return q.text }

// IsZero reports whether q is 0 or not set.
func (q Quantity) IsZero() bool { return q.v == nil || q.v.Sign() == 0 }

// Value is q rounded up to an integer, as Kubernetes' Value.
func (q Quantity) Value() int64 { return ceil(q.v, 1) }

// MilliValue is q in thousandths, rounded up, as Kubernetes' MilliValue.
func (q Quantity) MilliValue() int64 { return ceil(q.v, 1000) }

// ceil is ⌈v×scale⌉, bounded to int64.
func ceil(v *big.Rat, scale int64) int64 {
	if v == nil {
		return 0
	}
	r := new(big.Rat).Mul(v, big.NewRat(scale, 1))
	n, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if rem.Sign() > 0 {
		n.Add(n, big.NewInt(1))
	}
	switch {
	case !n.IsInt64() && n.Sign() > 0:
		return math.MaxInt64
	case !n.IsInt64():
		return math.MinInt64
	}
	return n.Int64()
}

// NewQuantity is the quantity n.
func NewQuantity(n int64) Quantity {
	return Quantity{text: big.NewInt(n).String(), v: new(big.Rat).SetInt64(n)}
}
