package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// validResults are a minimal valid result of each definition per era.
func validResult(era, def string) string {
	switch def {
	case DefInitializeResult:
		return `{"protocolVersion":"` + era + `","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`
	case DefDiscoverResult:
		return `{"resultType":"complete","ttlMs":0,"cacheScope":"public","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`
	}
	if era == Era20260728 {
		return `{"resultType":"complete","ttlMs":60000,"cacheScope":"public","tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
	}
	return `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
}

// TestEveryVendoredSchemaValidates: each era's schema compiles and accepts
// a valid result of each definition it has, and refuses one that breaks it
// (a tool without a name), naming where.
func TestEveryVendoredSchemaValidates(t *testing.T) {
	for _, era := range Eras() {
		t.Run(era, func(t *testing.T) {
			defs := []string{DefListToolsResult, DefInitializeResult}
			if era == Era20260728 {
				defs = []string{DefListToolsResult, DefDiscoverResult}
			}
			for _, def := range defs {
				if !HasSchema(era, def) {
					t.Fatalf("%s has no %s", era, def)
				}
				if err := Validate(era, def, json.RawMessage(validResult(era, def))); err != nil {
					t.Errorf("valid %s refused: %v", def, err)
				}
			}
			bad := strings.Replace(validResult(era, DefListToolsResult), `"name":"echo",`, ``, 1)
			err := Validate(era, DefListToolsResult, json.RawMessage(bad))
			if err == nil || !strings.Contains(err.Error(), "/tools/0") || !strings.Contains(err.Error(), "name") {
				t.Errorf("a tool without a name: %v", err)
			}
		})
	}
	if HasSchema(Era20260728, DefInitializeResult) || HasSchema(Era20251125, DefDiscoverResult) {
		t.Error("initialize is not of 2026-07-28, server/discover not of the 2025 eras")
	}
	if err := Validate("1999-01-01", DefListToolsResult, json.RawMessage(`{}`)); err == nil {
		t.Error("an unknown era validated")
	}
}

// TestVendoredSchemasMatchTheirSource: the files are the ones SOURCE names
// (their digests in SHA256SUMS), so a hand edit shows.
func TestVendoredSchemasMatchTheirSource(t *testing.T) {
	sums, err := os.ReadFile("schemas/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	source, err := os.ReadFile("schemas/SOURCE")
	if err != nil {
		t.Fatal(err)
	}
	for _, era := range Eras() {
		b, err := schemaFiles.ReadFile("schemas/" + era + "/schema.json")
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if line := hex.EncodeToString(h[:]) + "  " + era + "/schema.json"; !strings.Contains(string(sums), line) {
			t.Errorf("%s/schema.json does not match SHA256SUMS", era)
		}
		if !strings.Contains(string(source), "schema/"+era+"/schema.json") {
			t.Errorf("SOURCE does not name %s", era)
		}
	}
}

func BenchmarkValidateListTools(b *testing.B) {
	doc := json.RawMessage(validResult(Era20251125, DefListToolsResult))
	_ = Validate(Era20251125, DefListToolsResult, doc)
	b.ReportAllocs()
	for b.Loop() {
		_ = Validate(Era20251125, DefListToolsResult, doc)
	}
}
