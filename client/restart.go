package client

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// change says what Apply does when a config entry's value of a ServerSpec
// field differs from the running server's.
type change int

const (
	// restart: the field is in the restart key; the server is
	// reconfigured in its slot, one generation up.
	restart change = iota
	// inPlace: the running server takes the new value as it is: no
	// restart, the same generation.
	inPlace
)

// specFields is Apply's restart decision, one line for every field of
// ServerSpec; TestSpecFieldsDecided fails when a field is missing, so a
// new field cannot be left out of the decision by accident (a missing
// one would count as restart, the safe side).
var specFields = map[string]change{
	"Stdio":       restart,
	"HTTP":        restart,
	"OAuth":       restart,
	"Dialer":      restart, // never in a config entry
	"Disabled":    inPlace, // Apply disables or enables the slot
	"Lazy":        restart,
	"Timeout":     restart,
	"IdleTimeout": inPlace, // setIdleTimeout
	"Reconnect":   restart,
	"ToolPrefix":  restart,
	"ToolFilter":  inPlace, // setToolFilter: republished, nothing sent
	"MaxInFlight": restart,
	"Limits":      restart,
}

// restartKey identifies what of spec needs a restart when it changes: a
// canonical form of every field specFields does not apply in place. It is
// never shown (it holds the spec's secrets).
func restartKey(spec ServerSpec) string {
	var b strings.Builder
	v := reflect.ValueOf(spec)
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if specFields[f.Name] != restart {
			continue
		}
		b.WriteString(f.Name)
		b.WriteByte('=')
		canon(&b, v.Field(i))
		b.WriteByte(';')
	}
	return b.String()
}

// canon writes a canonical form of v: equal values, and only they, write
// the same (map keys sorted, pointers followed; a function or channel can
// only be told set or not).
func canon(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("nil")
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		canon(b, v.Elem())
	case reflect.Struct:
		b.WriteByte('{')
		for i := range v.NumField() {
			b.WriteString(v.Type().Field(i).Name)
			b.WriteByte(':')
			canon(b, v.Field(i))
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		keys := make([]string, 0, v.Len())
		vals := make(map[string]reflect.Value, v.Len())
		for it := v.MapRange(); it.Next(); {
			var kb strings.Builder
			canon(&kb, it.Key())
			keys = append(keys, kb.String())
			vals[kb.String()] = it.Value()
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for _, k := range keys {
			b.WriteString(k)
			b.WriteByte('=')
			canon(b, vals[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteByte('[')
		for i := range v.Len() {
			canon(b, v.Index(i))
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if v.IsNil() {
			b.WriteString("nil")
		} else {
			b.WriteString("set")
		}
	default:
		b.WriteString(v.Kind().String())
	}
}
