package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestPostgresReleasedMigrationsUnchanged: a released step of the schema
// is never edited (a database that applied it would not see the change),
// so its text stays byte for byte what was released, however the Go that
// spells it is arranged (reach_join's versions share their text).
func TestPostgresReleasedMigrationsUnchanged(t *testing.T) {
	released := map[int]string{
		1: "478331b08d4df94f4b6ca1abee771f780ac742d5ddc728080a3e71cc5ed78111",
		2: "bee29977066caa5ea6001d11f16fef04c67ac7c905da07e410d00fa376041e1b",
		3: "b7b4859ce3db559ffd88c0172b20794cc2514f6079fa3eb7666a0bd21fde7a87",
		4: "83beb8c4e8fe04b4dad4487307f697592600b835fa74ef864d06093f3dd10e62",
		5: "af78c14ec6be640e6174bd8707171102af042d96845425f2bd0e2bed6b8ac712",
	}
	for _, m := range pgMigrations {
		sum := sha256.Sum256([]byte(m.name + "\x00" + m.sql))
		if want, ok := released[m.version]; ok && hex.EncodeToString(sum[:]) != want {
			t.Errorf("migration %d (%s) is not the text released: add a step instead of editing one", m.version, m.name)
		}
	}
}
