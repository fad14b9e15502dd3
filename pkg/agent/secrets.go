package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// Agent-side secrets: the values of the ${agent:NAME} references
// endpoints make (model.AgentRefs), which the central service never holds.
// They come from a secrets file (--secrets-file), read at start and again
// on Reload (SIGHUP), and from the environment,
// MCPMON_AGENT_SECRET_<NAME> (model.SecretEnvVar); the file's entry wins.
// Values stay in memory as model.Secret.

// MaxSecretsFile bounds a secrets file.
const MaxSecretsFile = 1 << 20

// Secrets are an agent's secrets. The zero value has none but the
// environment's when LookupEnv is set.
type Secrets struct {
	path      string
	lookupEnv func(string) (string, bool)
	log       *slog.Logger

	mu   sync.RWMutex
	file map[string]model.Secret
}

// LoadSecrets reads the secrets file at path ("": none) and looks up the
// rest with lookupEnv (nil: no environment). A file readable by group or
// others is read, with a warning on log.
func LoadSecrets(path string, lookupEnv func(string) (string, bool), log *slog.Logger) (*Secrets, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Secrets{path: path, lookupEnv: lookupEnv, log: log}
	return s, s.Reload()
}

// Reload reads the secrets file again; on an error the secrets it had
// stay. Probes already handed their values keep them.
func (s *Secrets) Reload() error {
	if s.path == "" {
		return nil
	}
	m, err := readSecretsFile(s.path, s.log)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.file = m
	s.mu.Unlock()
	return nil
}

// Len is how many secrets the file holds.
func (s *Secrets) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.file)
}

// Lookup returns the secret name: the file's, else the environment's.
func (s *Secrets) Lookup(name string) (model.Secret, bool) {
	if s == nil {
		return "", false
	}
	s.mu.RLock()
	v, ok := s.file[name]
	s.mu.RUnlock()
	if ok {
		return v, true
	}
	if s.lookupEnv != nil {
		if v, ok := s.lookupEnv(model.SecretEnvVar(name)); ok {
			return model.Secret(v), true
		}
	}
	return "", false
}

func readSecretsFile(path string, log *slog.Logger) (map[string]model.Secret, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--secrets-file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		// As ssh warns of a private key others can read; a file mode is
		// not a secret's only guard (containers, mounted secrets), so it
		// is read anyway.
		log.Warn("the secrets file is readable by group or others; chmod 600 it", "path", path, "mode", st.Mode().Perm().String())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretsFile+1))
	if err != nil {
		return nil, fmt.Errorf("--secrets-file %s: %w", path, err)
	}
	if len(b) > MaxSecretsFile {
		return nil, fmt.Errorf("--secrets-file %s: larger than %d bytes", path, MaxSecretsFile)
	}
	m, err := ParseSecrets(b)
	if err != nil {
		return nil, fmt.Errorf("--secrets-file %s: %w", path, err)
	}
	return m, nil
}

// ErrSecretsSyntax: a secrets file line is not NAME=value.
var ErrSecretsSyntax = errors.New("want one NAME=value per line (NAME 1-64 of [A-Za-z0-9_.-]; # starts a comment line)")

// ParseSecrets reads a secrets file: one NAME=value per line, the value
// everything after the first "=" (a trailing CR dropped, nothing
// unquoted); blank lines and lines starting with "#" (after spaces) are
// skipped. A name given twice is an error. Errors name the line, never a
// value.
func ParseSecrets(b []byte) (map[string]model.Secret, error) {
	m := map[string]model.Secret{}
	for n, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		name, value, ok := bytes.Cut(trimmed, []byte("="))
		name = bytes.TrimRight(name, " \t")
		switch {
		case !ok || !model.ValidSecretName(string(name)):
			return nil, fmt.Errorf("line %d: %w", n+1, ErrSecretsSyntax)
		case hasKey(m, string(name)):
			return nil, fmt.Errorf("line %d: %s is given twice", n+1, name)
		}
		m[string(name)] = model.Secret(value)
	}
	return m, nil
}

func hasKey(m map[string]model.Secret, k string) bool { _, ok := m[k]; return ok }
