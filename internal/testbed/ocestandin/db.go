package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The database stand-in keeps OCE's state (migrated schema, Installation, service-key hash,
// Namespaces) in one JSON file in the data volume, so a fresh volume is a fresh database and a
// restarted container keeps its data, as with PostgreSQL. It speaks HTTP on 5432 with the
// role's credentials as basic auth, not the PostgreSQL wire protocol.
const (
	dataDir   = "/var/lib/postgresql"
	stateFile = "occ-standin-database.json"
	initDir   = "/docker-entrypoint-initdb.d"
)

type dbState struct {
	Database string            `json:"database"`
	Roles    map[string]string `json:"roles"`
	Migrated bool              `json:"migrated"`
	// Installation is nil until bootstrap ran.
	Installation *installation `json:"installation,omitempty"`
	// KeyHash is the sha256 of the bootstrap service key (never the key).
	KeyHash    string       `json:"keyHash,omitempty"`
	Namespaces []occNamespc `json:"namespaces,omitempty"`
}

type installation struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	CreatedAt string `json:"createdAt"`
}

type occNamespc struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Status         string `json:"status"`
	KubernetesName string `json:"kubernetesName,omitempty"`
}

type database struct {
	mu    sync.Mutex
	path  string
	state dbState
}

var createRole = regexp.MustCompile(`(?i)CREATE\s+ROLE\s+(\w+)\s+(?:WITH\s+)?LOGIN\s+PASSWORD\s+'([^']*)'`)

func runDatabase([]string) int {
	db, err := openDatabase()
	if err != nil {
		fmt.Fprintf(os.Stderr, "database stand-in: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", ":5432")
	if err != nil {
		fmt.Fprintf(os.Stderr, "database stand-in: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: db, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	logEvent(map[string]any{"event": "database system is ready to accept connections", "database": db.state.Database})
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "database stand-in: %v\n", err)
		return 1
	}
	return 0
}

// openDatabase loads the state file, or initialises a fresh database the way the postgres
// image does on an empty data directory: the superuser from POSTGRES_USER/POSTGRES_PASSWORD,
// the database from POSTGRES_DB, then every *.sql of /docker-entrypoint-initdb.d (of which the
// stand-in understands the login roles it creates).
func openDatabase() (*database, error) {
	db := &database{path: filepath.Join(dataDir, stateFile)}
	if b, err := os.ReadFile(db.path); err == nil {
		if err := json.Unmarshal(b, &db.state); err != nil {
			return nil, fmt.Errorf("read %s: %w", db.path, err)
		}
		return db, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	name := os.Getenv("POSTGRES_DB")
	user, password := os.Getenv("POSTGRES_USER"), os.Getenv("POSTGRES_PASSWORD")
	if password == "" {
		return nil, errors.New("POSTGRES_PASSWORD is required for a new database")
	}
	if user == "" {
		user = "postgres"
	}
	if name == "" {
		name = user
	}
	db.state = dbState{Database: name, Roles: map[string]string{user: password}}
	scripts, _ := filepath.Glob(filepath.Join(initDir, "*.sql"))
	sort.Strings(scripts)
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("init script %s: %w", s, err)
		}
		for _, m := range createRole.FindAllStringSubmatch(string(b), -1) {
			db.state.Roles[m[1]] = m[2]
		}
		logEvent(map[string]any{"event": "running init script", "file": filepath.Base(s)})
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	return db, db.save()
}

func (db *database) save() error {
	b, err := json.Marshal(db.state)
	if err != nil {
		return err
	}
	tmp := db.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, db.path)
}

func (db *database) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 2 || parts[0] != db.state.Database {
		http.Error(w, fmt.Sprintf("FATAL: database %q does not exist", parts[0]), http.StatusNotFound)
		return
	}
	if parts[1] == "ready" {
		w.WriteHeader(http.StatusOK)
		return
	}
	user, password, ok := r.BasicAuth()
	db.mu.Lock()
	defer db.mu.Unlock()
	if want, known := db.state.Roles[user]; !ok || !known || want != password {
		http.Error(w, fmt.Sprintf("FATAL: password authentication failed for user %q", user), http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodGet && parts[1] == "state":
		writeJSON(w, http.StatusOK, db.state.public())
	case r.Method == http.MethodPost && parts[1] == "migrate":
		if user != "occ_migrator" {
			http.Error(w, "ERROR: permission denied for database "+db.state.Database, http.StatusForbidden)
			return
		}
		db.state.Migrated = true
		db.respondSaved(w, db.state.public())
	case r.Method == http.MethodPost && parts[1] == "bootstrap":
		var in struct {
			Installation installation `json:"installation"`
			KeyHash      string       `json:"keyHash"`
			Namespace    occNamespc   `json:"namespace"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !db.state.Migrated {
			http.Error(w, `ERROR: relation "occ.installations" does not exist`, http.StatusConflict)
			return
		}
		if db.state.Installation != nil {
			http.Error(w, "installation exists", http.StatusConflict)
			return
		}
		db.state.Installation, db.state.KeyHash = &in.Installation, in.KeyHash
		db.state.Namespaces = append(db.state.Namespaces, in.Namespace)
		db.respondSaved(w, db.state.public())
	case r.Method == http.MethodPost && parts[1] == "namespaces" && len(parts) == 4 && parts[3] == "status":
		var in occNamespc
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for i := range db.state.Namespaces {
			if db.state.Namespaces[i].ID == parts[2] {
				db.state.Namespaces[i].Status, db.state.Namespaces[i].KubernetesName = in.Status, in.KubernetesName
				db.respondSaved(w, db.state.Namespaces[i])
				return
			}
		}
		http.Error(w, "no such namespace", http.StatusNotFound)
	default:
		http.Error(w, "unknown request", http.StatusNotFound)
	}
}

func (db *database) respondSaved(w http.ResponseWriter, v any) {
	if err := db.save(); err != nil {
		http.Error(w, "ERROR: could not write to file: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// public is the state without the roles' passwords.
func (s dbState) public() dbState {
	s.Roles = nil
	return s
}

// dbClient talks to the stand-in database named by a postgres:// URL.
type dbClient struct {
	base     *url.URL
	user     string
	password string
	http     *http.Client
}

func newDBClient(raw string) (*dbClient, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" || u.User == nil {
		return nil, errors.New("not a postgres URL with credentials")
	}
	password, _ := u.User.Password()
	return &dbClient{
		base:     &url.URL{Scheme: "http", Host: u.Host, Path: "/" + strings.TrimPrefix(u.Path, "/")},
		user:     u.User.Username(),
		password: password,
		http:     &http.Client{Timeout: 5 * time.Second},
	}, nil
}

func (c *dbClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.JoinPath(path).String(), body)
	if err != nil {
		return err
	}
	req.SetBasicAuth(c.user, c.password)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("connection to server at %q failed: %w", c.base.Host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return &dbError{status: resp.StatusCode, msg: strings.TrimSpace(string(b))}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

type dbError struct {
	status int
	msg    string
}

func (e *dbError) Error() string { return e.msg }

func (c *dbClient) state(ctx context.Context) (dbState, error) {
	var s dbState
	return s, c.call(ctx, http.MethodGet, "state", nil, &s)
}

// runPgIsReady answers like pg_isready: 0 accepting connections, 2 no response.
func runPgIsReady(args []string) int {
	db := ""
	for i := 0; i < len(args); i++ {
		if args[i] == "-d" && i+1 < len(args) {
			db = args[i+1]
		}
	}
	if db == "" {
		db = "postgres"
	}
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://127.0.0.1:5432/" + url.PathEscape(db) + "/ready")
	if err != nil {
		fmt.Println("127.0.0.1:5432 - no response")
		return 2
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Println("127.0.0.1:5432 - rejecting connections")
		return 1
	}
	fmt.Println("127.0.0.1:5432 - accepting connections")
	return 0
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	writeJSONLine(w, v)
}

func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"event":"log.encoding-failed"}`)
	}
	_, _ = w.Write(append(b, '\n'))
}
