package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// API is a client of one mcpmon REST API: its base URL (http://host:port),
// an API key (empty under --auth none) and the HTTP client to send with
// (a test passes apispec.Client to hold every exchange to openapi.yaml).
type API struct {
	URL    string
	Token  string
	Client *http.Client // nil: http.DefaultClient
}

// StatusError is an answer outside 2xx, with the body the API sent.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Body)
}

// Do sends body (JSON, if not nil) and decodes a 2xx answer into into (if
// not nil); any other answer is a *StatusError.
func (a API) Do(ctx context.Context, method, path string, body, into any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	c := a.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode, Body: string(bytes.TrimSpace(raw))}
	}
	if into == nil {
		return nil
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s %s: %w in %s", method, path, err, raw)
	}
	return nil
}

// Register creates an endpoint (POST /v1/endpoints with body) and returns
// its ID.
func (a API) Register(ctx context.Context, body map[string]any) (string, error) {
	var ep struct {
		ID string `json:"id"`
	}
	if err := a.Do(ctx, http.MethodPost, "/v1/endpoints", body, &ep); err != nil {
		return "", fmt.Errorf("register %v: %w", body["name"], err)
	}
	if ep.ID == "" {
		return "", fmt.Errorf("register %v: no id in the answer", body["name"])
	}
	return ep.ID, nil
}
