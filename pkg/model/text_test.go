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

func TestDisplayLineLeavesNoControlOrBidi(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "acme-mcp 1.2", 256, "acme-mcp 1.2"},
		{"terminal escapes", "a\x1b[2J\x07b\x00c\r\nd\x7f\u0085e", 256, "a [2J b c  d  e"},
		{"bidi overrides and marks", "gpj.\u202eexe\u2066x\u2069\u200e\u200f\u061c", 256, "gpj.\uFFFDexe\uFFFDx\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"invalid UTF-8", "a\xffb", 256, "a\uFFFDb"},
		{"cut on a rune boundary", "ééé", 3, "é…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DisplayLine(tc.in, tc.max); got != tc.want {
				t.Errorf("DisplayLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if len(tc.in) <= tc.max {
				if got := OneLine(tc.in); got != tc.want {
					t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.want)
				}
			}
		})
	}
}

func TestNoBidiKeepsLineBreaks(t *testing.T) {
	if got, want := NoBidi("line one\nline \u202etwo"), "line one\nline \uFFFDtwo"; got != want {
		t.Errorf("NoBidi = %q, want %q", got, want)
	}
}
