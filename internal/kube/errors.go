package kube

import apierrors "k8s.io/apimachinery/pkg/api/errors"

// IsNotFound reports whether err is the apiserver's NotFound.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }
