package recorded

import "strings"

// DownCommand is the exact command that removes the environment recorded in dir (and so
// finishes a cleanup), shell-quoted.
func DownCommand(occ, dir string) string { return Command(occ, "down", dir) }

// Command is `occ dev <verb>` of the environment recorded in dir, shell-quoted; occ is how the
// user runs occ, default "occ".
func Command(occ, verb, dir string) string {
	if occ == "" {
		occ = "occ"
	}
	return shellQuote(occ) + " dev " + verb + " --state-dir " + shellQuote(dir)
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
