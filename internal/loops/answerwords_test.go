package loops

import (
	"strings"
	"testing"
)

// A write's answer template reads the answer's first maxAnswerWords bytes
// only: each word of it is looked for in the write's arguments (up to
// maxChainArgs), and a 1 MB answer to a write of 4 KB of text cost a
// second of CPU a call. Words past them change nothing.
func TestAnswerWordsReadsABoundedAnswer(t *testing.T) {
	args := []byte(`{"text":"` + strings.Repeat("lorem ipsum dolor sit amet ", 150) + `"}`)
	head := strings.Repeat("saved entry ", maxAnswerWords/len("saved entry ")+1)[:maxAnswerWords]
	if answerWords([]byte(head), args) == answerWords([]byte("saved"), args) {
		t.Fatal("the answer's words are not hashed")
	}
	if a, b := answerWords([]byte(head), args), answerWords([]byte(head+strings.Repeat(" zebra quokka", 1<<16)), args); a != b {
		t.Errorf("the template of an answer with 850 KB more past its first %d bytes: %x, without them %x; want the same", maxAnswerWords, b, a)
	}
}
