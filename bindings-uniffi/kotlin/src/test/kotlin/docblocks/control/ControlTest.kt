// A negative control for the documentation's test blocks (DocTestsTest): a test that fails,
// in a package surefire leaves alone (docblocks/**), run only through runTests().
package docblocks.control

import org.junit.jupiter.api.Assertions.fail
import org.junit.jupiter.api.Test

class ControlTest {
    @Test
    fun `fails on purpose`() {
        fail<Unit>("on purpose")
    }
}
