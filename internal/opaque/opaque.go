// Package opaque lets a public type carry a value of an internal type that
// the module's packages read and a program outside the module cannot.
//
// A public package declares its type over Of:
//
//	type Recording opaque.Of[*cassette.Cassette]
//
// Its underlying type is a struct whose one field is unexported here, so
// outside the module the type has no field and no method: it can be named,
// passed and compared with its zero value (none), never opened. Inside the
// module, Make builds one and Get reads it back, typed.
package opaque

// Of holds a value of type V.
type Of[V any] struct{ v V }

// Make is a T holding v.
func Make[T ~struct{ v V }, V any](v V) T { return T(struct{ v V }{v}) }

// Get is the value t holds, V's zero value for T's zero value.
func Get[T ~struct{ v V }, V any](t T) V { return struct{ v V }(t).v }
