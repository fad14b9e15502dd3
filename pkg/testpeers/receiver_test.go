package testpeers

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestReceiverNextReturnsEachRequestOnceInOrder(t *testing.T) {
	r := NewReceiver(t, nil)
	for _, body := range []string{"one", "two"} {
		resp, err := http.Post(r.URL+"/hook", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := string(r.Next(time.Second).Body); got != "one" {
		t.Fatalf("first Next = %q, want one", got)
	}
	if got := string(r.Next(time.Second).Body); got != "two" {
		t.Fatalf("second Next = %q, want two", got)
	}
	if b := r.Bodies(); len(b) != 2 || string(b[0]) != "one" {
		t.Fatalf("Bodies = %q", b)
	}
}
