package model

import (
	"reflect"
	"testing"
)

// TestEndpointCloneSharesNothing fills every field of an Endpoint (by
// reflection, so a field added later is covered without editing this
// test), clones it, and checks the copy is equal and that no map, slice or
// pointer of it, at any depth, points at the original's memory.
func TestEndpointCloneSharesNothing(t *testing.T) {
	var e Endpoint
	fill(reflect.ValueOf(&e).Elem())
	c := e.Clone()
	if !reflect.DeepEqual(c, e) {
		t.Fatalf("clone differs:\n got %+v\nwant %+v", c, e)
	}
	disjoint(t, "Endpoint", reflect.ValueOf(c), reflect.ValueOf(e))

	var zero Endpoint
	if got := zero.Clone(); !reflect.DeepEqual(got, zero) {
		t.Fatalf("clone of the zero endpoint = %+v", got)
	}
}

// fill sets every field of v to a non-zero value, recursively.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, x := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(x)
		m.SetMapIndex(k, x)
		v.Set(m)
	case reflect.Struct:
		if v.Type().PkgPath() == "time" { // time.Time: unexported wall clock
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

// disjoint fails when a reference in a (a clone) shares memory with the
// same reference in b.
func disjoint(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if a.IsNil() {
			return
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			t.Errorf("%s shares memory with the original", path)
		}
		switch a.Kind() {
		case reflect.Pointer:
			disjoint(t, path, a.Elem(), b.Elem())
		case reflect.Slice:
			for i := range a.Len() {
				disjoint(t, path+"[i]", a.Index(i), b.Index(i))
			}
		case reflect.Map:
			for _, k := range a.MapKeys() {
				disjoint(t, path+"[k]", a.MapIndex(k), b.MapIndex(k))
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				disjoint(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
			}
		}
	}
}
