package installation

// Validate applies the OpenShell SandboxDriver rules and returns every problem found.
func (in *Installation) Validate() Problems {
	return nil
}
