package yaegigate

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"
)

// The core forbids named function results (gateway/yaegi_rules_test.go
// enforces it) because Yaegi v0.16.1 does not zero them on every call:
// a named result that is appended to and returned bare keeps earlier
// calls' values when interpreted code calls it from an if statement's
// init in a loop (a plain call, or a call from compiled code through
// reflect, got fresh results in our experiments). This test records that interpreter behaviour,
// so the rule's reason stays checkable: if a future Yaegi zeroes named
// results, this test fails and the rule can be reconsidered.
func TestYaegiNamedResultsAreNotZeroedPerCall(t *testing.T) {
	i := interp.New(interp.Options{})
	require.NoError(t, i.Use(stdlib.Symbols))
	_, err := i.Eval(`
func appendNamed(n int) (out []int, err error) {
	for i := 0; i < n; i++ {
		out = append(out, i)
	}
	return
}

func appendUnnamed(n int) ([]int, error) {
	var out []int
	for i := 0; i < n; i++ {
		out = append(out, i)
	}
	return out, nil
}

// Interpreted callers, as in the core: the longest result of three
// rounds of calls made from if statements in a loop.
func longestNamed() int {
	longest := 0
	for i := 0; i < 3; i++ {
		if out, _ := appendNamed(3); len(out) > longest {
			longest = len(out)
		}
		if out, _ := appendNamed(0); len(out) > longest {
			longest = len(out)
		}
	}
	return longest
}

func longestUnnamed() int {
	longest := 0
	for i := 0; i < 3; i++ {
		if out, _ := appendUnnamed(3); len(out) > longest {
			longest = len(out)
		}
		if out, _ := appendUnnamed(0); len(out) > longest {
			longest = len(out)
		}
	}
	return longest
}
`)
	require.NoError(t, err)
	second := func(name string) int {
		v, err := i.Eval(name)
		require.NoError(t, err)
		fn, ok := v.Interface().(func() int)
		require.True(t, ok, "%s has type %s", name, v.Type())
		return fn()
	}
	unnamed := second("longestUnnamed")
	named := second("longestNamed")
	require.Equal(t, 3, unnamed, "unnamed results are fresh on every call")
	require.Greater(t, named, 3, "Yaegi kept the named result of earlier calls (the reason for the core's no-named-results rule)")
}

// The core checks err != nil before a comma-ok type assertion of an
// error to an interface (isTimeout in gateway/admission.go and
// gateway/internal/store): under Yaegi v0.16.1 the assertion of a nil
// interface panics ("reflect: call of reflect.Value.Type on zero Value")
// where compiled Go yields ok == false. This records the behaviour: if a
// future Yaegi handles it, this test fails and the guard can go.
func TestYaegiNilInterfaceAssertionPanics(t *testing.T) {
	i := interp.New(interp.Options{})
	require.NoError(t, i.Use(stdlib.Symbols))
	_, err := i.Eval(`
import "net"

func assertNil() bool {
	var err error
	_, ok := err.(net.Error)
	return ok
}
`)
	require.NoError(t, err)
	v, err := i.Eval("assertNil")
	require.NoError(t, err)
	fn, ok := v.Interface().(func() bool)
	require.True(t, ok)
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		fn()
		return false
	}()
	require.True(t, panicked, "Yaegi no longer panics on a comma-ok assertion of a nil interface")
}

// Tests of the core compare interface values only with values that came
// from the same interface variable, never with a fresh conversion: under
// Yaegi v0.16.1 an interface holding a pointer to an interpreted type is
// unequal to the same pointer converted to the interface again (h ==
// H(m) is false where compiled Go says true), while two copies of one
// interface value compare equal. This records the behaviour.
func TestYaegiInterfaceConversionIsNotEqual(t *testing.T) {
	i := interp.New(interp.Options{})
	require.NoError(t, i.Use(stdlib.Symbols))
	_, err := i.Eval(`
type H interface{ A() }

type M struct{ x int }

func (m *M) A() {}

func compare() (bool, bool) {
	m := &M{}
	var h H = m
	copied := h
	return h == H(m), copied == h
}
`)
	require.NoError(t, err)
	v, err := i.Eval("compare")
	require.NoError(t, err)
	fn, ok := v.Interface().(func() (bool, bool))
	require.True(t, ok)
	converted, copied := fn()
	require.True(t, copied, "two copies of one interface value compare equal")
	require.False(t, converted, "Yaegi now says an interface equals a fresh conversion of the same pointer")
}

// The core has no `for i := x; ; { … }` loop (gateway/yaegi_rules_test.go
// fails on one): under Yaegi v0.16.1 a loop with an init statement but
// neither a condition nor a post statement starts every turn with the
// init's value, so assignments to its variable in the body are lost and
// a loop meant to advance spins. Declared before a plain `for {`, the
// variable advances. This records the behaviour (each loop is bounded by
// a turn count, so the interpreted loop cannot hang the test).
func TestYaegiForInitWithoutConditionOrPostResets(t *testing.T) {
	i := interp.New(interp.Options{})
	require.NoError(t, i.Use(stdlib.Symbols))
	_, err := i.Eval(`
func turnsWithInit() int {
	turns := 0
	for i := 0; ; {
		turns++
		if i >= 3 || turns >= 10 {
			return turns
		}
		i = i + 1
	}
}

func turnsDeclaredBefore() int {
	turns := 0
	i := 0
	for {
		turns++
		if i >= 3 || turns >= 10 {
			return turns
		}
		i = i + 1
	}
}
`)
	require.NoError(t, err)
	turns := func(name string) int {
		v, err := i.Eval(name)
		require.NoError(t, err)
		fn, ok := v.Interface().(func() int)
		require.True(t, ok, "%s has type %s", name, v.Type())
		return fn()
	}
	require.Equal(t, 4, turns("turnsDeclaredBefore"), "a variable declared before the loop advances")
	require.Equal(t, 10, turns("turnsWithInit"), "Yaegi no longer resets the init variable of a `for init; ; {}` loop (the reason for the core's rule)")
}
