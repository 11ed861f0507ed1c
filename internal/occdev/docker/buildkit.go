package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// BuildKit session headers: the engine upgrades POST /session to an HTTP/2 connection on which
// the client serves gRPC and the builder calls back (for secrets, SSH, local files). The
// header names are those of moby/buildkit's session package.
const (
	sessionIDHeader     = "X-Docker-Expose-Session-Uuid"
	sessionNameHeader   = "X-Docker-Expose-Session-Name"
	sessionKeyHeader    = "X-Docker-Expose-Session-Sharedkey"
	sessionMethodHeader = "X-Docker-Expose-Session-Grpc-Method"
)

// startBuildSession opens a BuildKit session that offers only gRPC health, which the builder
// polls to keep the session alive. A builder asking it for a secret gets "unimplemented", which
// BuildKit treats as "no such secret": optional secret mounts are skipped and required ones fail
// with BuildKit's own message. stop closes the session.
func startBuildSession(ctx context.Context, api API) (string, func(), error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, fmt.Errorf("generate a BuildKit session id: %w", err)
	}
	id := hex.EncodeToString(raw)
	conn, err := api.DialHijack(ctx, "/session", "h2c", map[string][]string{
		sessionIDHeader:     {id},
		sessionNameHeader:   {"occ"},
		sessionKeyHeader:    {"occ-" + id},
		sessionMethodHeader: {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"},
	})
	if err != nil {
		return "", nil, fmt.Errorf("open a BuildKit session with the engine (it needs BuildKit, Docker 18.09 or later): %w", err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&http2.Server{}).ServeConn(conn, &http2.ServeConnOpts{Context: sctx, Handler: srv})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			srv.Stop()
			_ = conn.Close()
			<-done
		})
	}
	return id, stop, nil
}

// maxStepOutput bounds the output kept per build step for the failure message.
const maxStepOutput = 40

// buildTrace follows BuildKit's progress (the "moby.buildkit.trace" messages, each a protobuf
// StatusResponse of moby/buildkit's control API) far enough to print steps as they start and
// end, pass their output on, and name the failing step with its last output lines.
type buildTrace struct {
	progress func(string)
	vertices map[string]*traceVertex
	order    []string
}

type traceVertex struct {
	name      string
	started   bool
	completed bool
	cached    bool
	err       string
	output    []string
	partial   string
}

func newBuildTrace(progress func(string)) *buildTrace {
	return &buildTrace{progress: progress, vertices: map[string]*traceVertex{}}
}

func (t *buildTrace) vertex(digest string) *traceVertex {
	v, ok := t.vertices[digest]
	if !ok {
		v = &traceVertex{}
		t.vertices[digest] = v
		t.order = append(t.order, digest)
	}
	return v
}

// add applies one StatusResponse: field 1 holds vertices, field 3 log chunks.
func (t *buildTrace) add(msg []byte) error {
	return eachField(msg, func(num protowire.Number, value []byte) error {
		switch num {
		case 1:
			return t.addVertex(value)
		case 3:
			return t.addLog(value)
		}
		return nil
	})
}

// addVertex applies a Vertex: digest 1, name 3, cached 4, started 5, completed 6, error 7.
func (t *buildTrace) addVertex(msg []byte) error {
	var digest, name, errText string
	var cached, started, completed bool
	err := eachField(msg, func(num protowire.Number, value []byte) error {
		switch num {
		case 1:
			digest = string(value)
		case 3:
			name = string(value)
		case 4:
			cached = len(value) > 0 && value[0] != 0
		case 5:
			started = true
		case 6:
			completed = true
		case 7:
			errText = string(value)
		}
		return nil
	})
	if err != nil {
		return err
	}
	v := t.vertex(digest)
	if name != "" {
		v.name = name
	}
	if started && !v.started {
		v.started = true
		t.progress(v.name)
	}
	if cached && !v.cached {
		v.cached = true
		t.progress(v.name + ": cached")
	}
	if errText != "" && v.err == "" {
		v.err = errText
		t.progress(v.name + ": " + errText)
	}
	if completed && !v.completed {
		v.completed = true
		if v.partial != "" {
			v.keep(v.partial, t.progress)
			v.partial = ""
		}
	}
	return nil
}

// addLog applies a VertexLog: vertex 1, msg 4 (a chunk of the step's output, not always whole
// lines).
func (t *buildTrace) addLog(msg []byte) error {
	var digest string
	var chunk []byte
	err := eachField(msg, func(num protowire.Number, value []byte) error {
		switch num {
		case 1:
			digest = string(value)
		case 4:
			chunk = value
		}
		return nil
	})
	if err != nil {
		return err
	}
	v := t.vertex(digest)
	text := v.partial + string(chunk)
	lines := strings.Split(text, "\n")
	v.partial = lines[len(lines)-1]
	for _, line := range lines[:len(lines)-1] {
		v.keep(line, t.progress)
	}
	return nil
}

func (v *traceVertex) keep(line string, progress func(string)) {
	line = strings.TrimRight(line, "\r")
	progress("  " + line)
	v.output = append(v.output, line)
	if len(v.output) > maxStepOutput {
		v.output = v.output[len(v.output)-maxStepOutput:]
	}
}

// failure is the build error: the engine's message, then each failed step with its last lines
// of output.
func (t *buildTrace) failure(msg string) error {
	var b strings.Builder
	b.WriteString(msg)
	for _, d := range t.order {
		v := t.vertices[d]
		if v.err == "" {
			continue
		}
		if v.partial != "" {
			v.output = append(v.output, v.partial)
			v.partial = ""
		}
		fmt.Fprintf(&b, "\nfailing step %s", v.name)
		if len(v.output) == 0 {
			b.WriteString(" (no output)")
			continue
		}
		fmt.Fprintf(&b, ", last %d lines of its output:", len(v.output))
		for _, line := range v.output {
			b.WriteString("\n  " + line)
		}
	}
	return fmt.Errorf("%s", b.String())
}

// eachField calls fn for every length-delimited or varint field of a protobuf message; varint
// values are passed as one byte (0 or 1) because only booleans are read.
func eachField(msg []byte, fn func(protowire.Number, []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		switch typ {
		case protowire.BytesType:
			value, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return protowire.ParseError(n)
			}
			msg = msg[n:]
			if err := fn(num, value); err != nil {
				return err
			}
		case protowire.VarintType:
			value, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return protowire.ParseError(n)
			}
			msg = msg[n:]
			b := byte(0)
			if value != 0 {
				b = 1
			}
			if err := fn(num, []byte{b}); err != nil {
				return err
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return protowire.ParseError(n)
			}
			msg = msg[n:]
		}
	}
	return nil
}
