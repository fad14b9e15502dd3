package status

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
)

// verdana11 holds the advance widths of printable ASCII (32..126) in
// Verdana at 11px, in 1/2048 em font units, the table shields.io measures
// badge text with. A character outside it counts as the widest one, so
// text is never measured short.
var verdana11 = [95]int{
	720, 821, 1059, 1882, 1423, 2516, 1675, 562, 1180, 1180, 1423, 1882, 720, 1010, 720, 1180, // ' '../
	1423, 1423, 1423, 1423, 1423, 1423, 1423, 1423, 1423, 1423, // 0..9
	821, 821, 1882, 1882, 1882, 1215, 2338, // :..@
	1577, 1545, 1609, 1770, 1446, 1317, 1784, 1731, 970, 1010, 1578, 1279, 1925, 1717, 1813, 1377, 1813, // A..Q
	1595, 1544, 1392, 1690, 1577, 2280, 1578, 1392, 1577, // R..Z
	1180, 1180, 1180, 1882, 1423, 1423, // [..`
	1355, 1415, 1186, 1415, 1339, 778, 1415, 1434, 617, 784, 1323, 617, 2200, 1434, 1361, 1415, 1415, // a..q
	963, 1168, 888, 1434, 1323, 1765, 1323, 1323, 1173, // r..z
	1425, 1180, 1425, 1882, // {..~
}

const widestUnit = 2516

// TextWidth is the width in pixels of s set in Verdana 11px, rounded up.
func TextWidth(s string) int {
	units := 0
	for _, r := range s {
		if r >= 32 && r <= 126 {
			units += verdana11[r-32]
		} else {
			units += widestUnit
		}
	}
	return (units*11 + 2047) / 2048
}

// badgeColours are shields' colours per state; the message says the state
// in words as well.
var badgeColours = map[string]string{
	"up": "#4c1", "degraded": "#dfb317", "regional": "#fe7d37", "down": "#e05d44", StateMaintenance: "#007ec6",
}

var badgeTmpl = template.Must(template.New("badge").Parse(
	`<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="20" role="img" aria-label="{{.Label}}: {{.Message}}">` +
		`<title>{{.Label}}: {{.Message}}</title>` +
		`<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>` +
		`<clipPath id="r"><rect width="{{.W}}" height="20" rx="3" fill="#fff"/></clipPath>` +
		`<g clip-path="url(#r)"><rect width="{{.LW}}" height="20" fill="#555"/><rect x="{{.LW}}" width="{{.MW}}" height="20" fill="{{.Colour}}"/><rect width="{{.W}}" height="20" fill="url(#s)"/></g>` +
		`<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110">` +
		`<text aria-hidden="true" x="{{.LX}}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{{.LT}}">{{.Label}}</text>` +
		`<text x="{{.LX}}" y="140" transform="scale(.1)" fill="#fff" textLength="{{.LT}}">{{.Label}}</text>` +
		`<text aria-hidden="true" x="{{.MX}}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{{.MT}}">{{.Message}}</text>` +
		`<text x="{{.MX}}" y="140" transform="scale(.1)" fill="#fff" textLength="{{.MT}}">{{.Message}}</text>` +
		`</g></svg>`))

// Badge renders a shields-style flat badge: label, then the state and the
// 30-day uptime. Each half is its measured text width plus 5px padding a
// side, and every <text> carries textLength, so a renderer whose fallback
// font is wider than Verdana squeezes the text instead of overflowing.
func Badge(label string, p Page) []byte {
	msg := p.StateWord
	if p.Uptime30.Measured {
		msg += " | " + p.Uptime30.Percent()
	}
	colour, ok := badgeColours[p.State]
	if !ok {
		colour = "#9f9f9f"
	}
	return renderBadge(label, msg, colour)
}

// renderBadge is the flat badge of label and msg, the message half in
// colour.
func renderBadge(label, msg, colour string) []byte {
	label = strings.TrimSpace(label)
	lt, mt := TextWidth(label), TextWidth(msg)
	lw, mw := lt+10, mt+10
	var b bytes.Buffer
	err := badgeTmpl.Execute(&b, map[string]any{
		"W": lw + mw, "LW": lw, "MW": mw, "Colour": colour, "Label": label, "Message": msg,
		"LX": lw * 5, "MX": lw*10 + mw*5, "LT": lt * 10, "MT": mt * 10,
	})
	if err != nil {
		panic(fmt.Sprintf("status: badge template: %v", err)) // a constant template over strings and ints
	}
	return b.Bytes()
}
