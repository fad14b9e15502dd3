package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// maxInputFile bounds a -f file: above the API's body cap, so the API's
// own 413 and field problems are what a user sees.
const maxInputFile = 1 << 20

// inputKind is a kind of object a command reads whole from -f: what to
// call it, and the members its view has that its input has not (what the
// server sets).
type inputKind struct {
	what     string
	readOnly []string
}

// statusPageInput: apiv1.StatusPageView less apiv1.StatusPageInput.
var statusPageInput = inputKind{what: "status page", readOnly: []string{"id", "tenant", "hostVerification", "createdAt", "updatedAt"}}

// read decodes the JSON object in path (- for stdin) into dst, the API
// input of k, refusing unknown members as the API does. A document that
// `get -o json` printed is accepted: the view's read-only members are
// dropped first (inputMembers), and an "id" that names another object
// than id (the one being changed; "" on create) is refused rather than
// silently applied to the wrong one.
func (k inputKind) read(path string, stdin io.Reader, id string, dst any) error {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return usagef("-f: %v", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInputFile+1))
	if err != nil {
		return fmt.Errorf("-f %s: %w", path, err)
	}
	if len(b) > maxInputFile {
		return usagef("-f %s: more than %d bytes", path, maxInputFile)
	}
	b, err = k.inputMembers(b, id)
	if err != nil {
		return usagef("-f %s: %v", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return usagef("-f %s: %v", path, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// inputMembers is doc without k's read-only members. A doc that is not
// an object, or holds none of them, comes back as it was, for the
// decoder to judge. With id set, doc's own "id", if any, must equal it.
func (k inputKind) inputMembers(doc []byte, id string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(doc, &obj) != nil || obj == nil {
		return doc, nil
	}
	if raw, ok := obj["id"]; ok && id != "" && slices.Contains(k.readOnly, "id") {
		var got string
		if json.Unmarshal(raw, &got) != nil || got != id {
			return nil, fmt.Errorf("\"id\": %s is another %s than the one being updated (%s): drop the member, or update that one", raw, k.what, id)
		}
	}
	found := false
	for _, m := range k.readOnly {
		if _, ok := obj[m]; ok {
			delete(obj, m)
			found = true
		}
	}
	if !found {
		return doc, nil
	}
	return json.Marshal(obj)
}
