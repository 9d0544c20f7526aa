//go:build poison

package pipeline

// PoisonReleased is set in a build with the poison tag: producers poison
// what a lease gives back instead of reusing it, and Batch.CheckLive
// panics on released memory (see Lease).
const PoisonReleased = true
