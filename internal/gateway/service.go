package gateway

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// GetService reads a sandbox's service endpoint (name "" is the unnamed endpoint) and checks
// it against the contract: the endpoint names the requested sandbox and service, its port is
// 1..65535, its authorization mode is explicit, and its URL is an http(s) origin. An absent
// endpoint matches ErrNotFound.
func (c *Client) GetService(ctx context.Context, workspace, sandbox, name string) (*ServiceEndpoint, error) {
	const method = "GetService"
	if err := checkName(method, "workspace", workspace); err != nil {
		return nil, err
	}
	if err := checkName(method, "sandbox", sandbox); err != nil {
		return nil, err
	}
	if name != "" {
		if err := checkName(method, "name", name); err != nil {
			return nil, err
		}
	}
	req := &openshellv1.GetServiceRequest{Sandbox: sandbox, Name: name, WorkspaceScope: selector(workspace)}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.GetService)
	if err != nil {
		return nil, err
	}
	ep := resp.GetEndpoint()
	bad := func(problem string) (*ServiceEndpoint, error) {
		return nil, &ResponseError{Method: method, Problem: problem}
	}
	switch {
	case ep == nil:
		return bad("no endpoint in the response")
	case ep.GetSandbox() != sandbox:
		return bad(fmt.Sprintf("endpoint sandbox %q differs from the requested %q", ep.GetSandbox(), sandbox))
	case ep.GetName() != name:
		return bad(fmt.Sprintf("endpoint name %q differs from the requested %q", ep.GetName(), name))
	case ep.GetTargetPort() < 1 || ep.GetTargetPort() > 65535:
		return bad(fmt.Sprintf("endpoint target port %d is not 1 to 65535", ep.GetTargetPort()))
	case ep.GetAuthorizationMode() == 0:
		return bad("endpoint has no authorization mode, which Gateways before OpenShell 0.1.3-pre.2 do not send; run the pinned OpenShell " +
			contract.PinnedOpenShellVersion)
	}
	u, err := c.ServiceURL(resp.GetUrl())
	if err != nil {
		return bad(err.Error())
	}
	route, err := c.ServiceRoute(resp.GetUrl())
	if err != nil {
		return bad(err.Error())
	}
	return &ServiceEndpoint{
		Sandbox:           ep.GetSandbox(),
		SandboxID:         ep.GetSandboxId(),
		Name:              ep.GetName(),
		TargetPort:        ep.GetTargetPort(),
		Domain:            ep.GetDomain(),
		AuthorizationMode: ep.GetAuthorizationMode(),
		URL:               u,
		AdvertisedURL:     resp.GetUrl(),
		Route:             route,
	}, nil
}

// ServiceRoute says how to reach the service an advertised URL names. OpenShell serves service
// traffic on the gateway's own listener and routes it by the Host header, and the advertised
// host (<workspace>--<sandbox>.openshell.localhost) resolves only where the system resolver maps
// *.localhost to loopback. So a request goes to the address this client dials for gRPC and
// names the service only in Host; no lookup of the service host is ever made. TLS follows the
// gRPC channel: used when the endpoint uses it, and verified against the endpoint's host.
func (c *Client) ServiceRoute(advertised string) (ServiceRoute, error) {
	if _, err := c.ServiceURL(advertised); err != nil {
		return ServiceRoute{}, err
	}
	u, _ := url.Parse(advertised) // ServiceURL parsed it already
	return ServiceRoute{Address: c.ep.target, Host: u.Host, TLS: c.ep.tls, ServerName: c.ep.host}, nil
}

// ServiceURL checks an advertised service URL and returns the URL to use: it must be an
// http(s) origin with path "/" (or none) and no credentials, query or fragment, and its port
// is replaced by the port this client reaches the gateway on, because the gateway advertises
// its own listener port, which differs when it is reached through a port-forward or a Service.
func (c *Client) ServiceURL(advertised string) (string, error) {
	u, err := url.Parse(advertised)
	if err != nil {
		// The parse error quotes the input, which could hold userinfo; say only what is wrong.
		return "", fmt.Errorf("OpenShell service URL is not a URL; it must be an HTTP origin without credentials, query, or fragment")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		// Shown by occ's one rule: userinfo, a query or a fragment may each carry a token.
		return "", fmt.Errorf("OpenShell service URL %q must be an HTTP origin without credentials, query, or fragment", contract.RedactURL(advertised))
	}
	u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(c.ep.port))
	u.Path = "/"
	return u.String(), nil
}
