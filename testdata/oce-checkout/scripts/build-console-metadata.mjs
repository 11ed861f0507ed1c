// Placeholder at the path of the real OCE file. In the test images `node` is the ocestandin
// binary, which dispatches on this path; see README.md.
