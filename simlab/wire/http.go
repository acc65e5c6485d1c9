package wire

import (
	"encoding/json"
	"net/http"
)

// WriteJSON answers an HTTP request of a REST emulator with code and v as
// its JSON body.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
