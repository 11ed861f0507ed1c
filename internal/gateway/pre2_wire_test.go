package gateway

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// The bytes below are written by hand the way the pinned Gateway (OpenShell v0.1.3-pre.2) puts
// them on the wire, so these tests do not depend on our generated code's view of the wire.

// pre2Endpoint encodes ServiceEndpointResponse{endpoint{sandbox, name, target_port, domain,
// authorization_mode}, url}; mode 0 leaves out fields 6 and 7, which is what a pre.1 Gateway
// sends.
func pre2Endpoint(mode openshellv1.ServiceAuthorizationMode) []byte {
	ep := appendString(nil, 3, "sb")
	ep = appendString(ep, 4, "app")
	ep = protowire.AppendTag(ep, 5, protowire.VarintType)
	ep = protowire.AppendVarint(ep, 8080)
	if mode != 0 {
		ep = protowire.AppendTag(ep, 6, protowire.VarintType)
		ep = protowire.AppendVarint(ep, 1)
		ep = protowire.AppendTag(ep, 7, protowire.VarintType)
		ep = protowire.AppendVarint(ep, uint64(mode))
	}
	resp := protowire.AppendTag(nil, 1, protowire.BytesType)
	resp = protowire.AppendBytes(resp, ep)
	return appendString(resp, 2, "http://w--sb--app.openshell.localhost:8080/")
}

// A pre.2 GetService answer carries domain (6) and authorization_mode (7): both decode into
// declared fields, none is left as an unknown field.
func TestServiceEndpointPre2Wire(t *testing.T) {
	var resp openshellv1.ServiceEndpointResponse
	if err := proto.Unmarshal(pre2Endpoint(openshellv1.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_BEARER_PASSTHROUGH), &resp); err != nil {
		t.Fatalf("decode pre.2 endpoint: %v", err)
	}
	ep := resp.GetEndpoint()
	if ep.GetAuthorizationMode() != openshellv1.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_BEARER_PASSTHROUGH || !ep.GetDomain() || ep.GetTargetPort() != 8080 {
		t.Fatalf("endpoint = %v, want BEARER_PASSTHROUGH on a domain, port 8080", ep)
	}
	if unknown := ep.ProtoReflect().GetUnknown(); len(unknown) != 0 {
		t.Fatalf("the endpoint left %d bytes undecoded: a pre.2 field is not declared", len(unknown))
	}
}

// pre1Gateway answers GetService the way OpenShell v0.1.3-pre.1 does: without an authorization
// mode, because that wire has no field for it.
type pre1Gateway struct {
	openshellv1.UnimplementedOpenShellServer
}

func (pre1Gateway) GetService(context.Context, *openshellv1.GetServiceRequest) (*openshellv1.ServiceEndpointResponse, error) {
	var resp openshellv1.ServiceEndpointResponse
	if err := proto.Unmarshal(pre2Endpoint(0), &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// occ pointed at a pre.1 Gateway: GetService refuses the endpoint and says which release the
// client needs, instead of assuming a default for the missing authorization mode.
func TestGetServiceRefusesAPre1Gateway(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	openshellv1.RegisterOpenShellServer(srv, pre1Gateway{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	c, err := Dial(context.Background(), Config{Endpoint: lis.Addr().String(), InsecureTransport: InsecureTransportNetworkPolicy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = c.GetService(ctx, "w", "sb", "app")
	var re *ResponseError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "no authorization mode") || !strings.Contains(err.Error(), "0.1.3-pre.2") {
		t.Fatalf("GetService against a pre.1 Gateway = %v, want a refusal naming the missing authorization mode and the release", err)
	}
}

// The driver's runtime profile carries files: they go on the wire at ProviderProfile field 14,
// each with path (1), content (2) and env_var (3).
func TestProviderProfileFilesPre2Wire(t *testing.T) {
	b, err := proto.Marshal(&openshellv1.ProviderProfile{Id: "runtime", Files: []*openshellv1.ProviderProfileFile{
		{Path: "/home/agent/.config/app.json", Content: `{"url":"{{config.url}}"}`, EnvVar: "APP_CONFIG"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	files := fieldsOf(t, b)[14]
	if len(files) != 1 {
		t.Fatalf("profile bytes carry %d values at field 14, want 1 file", len(files))
	}
	file := fieldsOf(t, files[0])
	if string(file[1][0]) != "/home/agent/.config/app.json" || string(file[2][0]) != `{"url":"{{config.url}}"}` || string(file[3][0]) != "APP_CONFIG" {
		t.Fatalf("file fields = %q, want path at 1, content at 2, env_var at 3", file)
	}
}

// fieldsOf splits a message's bytes into the raw values of its length-delimited fields by
// number, failing on any other wire type.
func fieldsOf(t *testing.T, b []byte) map[protowire.Number][][]byte {
	t.Helper()
	out := map[protowire.Number][][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			t.Fatalf("unexpected tag (field %d, wire type %d)", num, typ)
		}
		b = b[n:]
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			t.Fatalf("field %d: bad length", num)
		}
		out[num] = append(out[num], v)
		b = b[m:]
	}
	return out
}
