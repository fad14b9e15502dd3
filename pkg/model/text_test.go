package model

import "testing"

func TestIsBidiControl(t *testing.T) {
	bidi := []rune{0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}
	for _, r := range bidi {
		if !IsBidiControl(r) {
			t.Errorf("%U is a bidirectional control", r)
		}
	}
	for _, r := range []rune{'a', ' ', 0x200B, 0x200D, 0x2029, 0x202F, 0x2065, 0x206A, 0xFFFD, 0x05D0} {
		if IsBidiControl(r) {
			t.Errorf("%U is not a bidirectional control", r)
		}
	}
}
