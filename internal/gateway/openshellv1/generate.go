// Package openshellv1 holds the Go code generated from our own description of
// the OpenShell gateway v0.1.x wire contract in api/openshell/v1. Do not edit
// the *.pb.go files: change the .proto files and run `go generate ./...`.
//
// The generators are pinned as go.mod tool directives, so regeneration needs
// only protoc itself (Debian: protobuf-compiler and libprotobuf-dev for the
// well-known types). `go tool -n` prints the path of the cached plugin binary
// without running it, which is what protoc's --plugin flag needs.
package openshellv1

//go:generate sh -c "protoc -I ../../../api/openshell/v1 --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative ../../../api/openshell/v1/datamodel.proto ../../../api/openshell/v1/sandbox.proto ../../../api/openshell/v1/provider.proto ../../../api/openshell/v1/unconfirmed.proto ../../../api/openshell/v1/openshell.proto"
